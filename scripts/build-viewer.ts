// `npm run setup` builds `toolrl view`'s page here (esbuild, offline) into dist/viewer/ (index.html, app.js,
// app.css), unless the one there was built from the same sources and libraries.
import { buildPage, pageDir, pageIsCurrent } from '#shared/viewer/page-build';

if (pageIsCurrent()) process.stdout.write(`setup: viewer page up to date (${pageDir()})\n`);
else {
  const files = await buildPage();
  process.stdout.write(`setup: viewer page built in ${pageDir()} (${files.join(', ')})\n`);
}

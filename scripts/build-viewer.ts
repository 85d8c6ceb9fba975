// `npm run setup` builds `toolrl view`'s page here (esbuild, offline): dist/viewer/{index.html,app.js,app.css}.
import { buildPage, pageDir } from '#shared/viewer/page-build';

const files = await buildPage();
process.stdout.write(`setup: viewer page built in ${pageDir()} (${files.join(', ')})\n`);

// Bundles the viewer's page (shared/viewer/page/: Preact and uPlot) into dist/viewer/ with esbuild, offline, at
// `npm run setup`; `toolrl view` rebuilds it when its sources or libraries changed since (a stamp of their
// hashes), so a pulled change never serves a stale page. Nothing is fetched at run time: no CDN.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const PAGE_SRC = join(HERE, 'page');
const REPO = join(HERE, '..', '..');
const STAMP = 'stamp.txt';
/** The libraries bundled into the page; their versions are part of the stamp. */
const BUNDLED = ['preact', 'uplot'];

/** Where the built page lives: dist/viewer/ at the repository's root (ignored by git). */
export const pageDir = (): string => join(REPO, 'dist', 'viewer');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

/** A hash of what the page is built from: its sources and the modules it takes from the server's folder, and the
 * versions of esbuild and the bundled libraries. */
export function pageStamp(): string {
  const h = createHash('sha256');
  for (const f of [...sourceFiles(PAGE_SRC), join(HERE, 'api.ts'), join(HERE, 'conversation.ts')]) {
    h.update(f.slice(REPO.length));
    h.update(readFileSync(f));
  }
  for (const pkg of [...BUNDLED, 'esbuild']) {
    const manifest = JSON.parse(readFileSync(join(REPO, 'node_modules', pkg, 'package.json'), 'utf8')) as {
      version: string;
    };
    h.update(`${pkg}@${manifest.version}`);
  }
  return h.digest('hex');
}

export function pageIsCurrent(dir = pageDir()): boolean {
  try {
    return readFileSync(join(dir, STAMP), 'utf8').trim() === pageStamp();
  } catch {
    return false;
  }
}

/** Builds the page into `dir` (written beside it, then moved into place). Returns the files written. */
export async function buildPage(dir = pageDir()): Promise<string[]> {
  const { build } = await import('esbuild');
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  await build({
    entryPoints: { app: join(PAGE_SRC, 'main.tsx') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: tmp,
    logLevel: 'silent',
    legalComments: 'linked',
    // The page's tsconfig, not the repository's (which is for Node and has no JSX).
    tsconfig: join(PAGE_SRC, 'tsconfig.json'),
  });
  writeFileSync(join(tmp, 'index.html'), readFileSync(join(PAGE_SRC, 'index.html')));
  writeFileSync(join(tmp, STAMP), `${pageStamp()}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  renameSync(tmp, dir);
  return readdirSync(dir).sort();
}

/** The built page's folder, built first when missing or stale. */
export async function ensurePage(dir = pageDir(), log: (line: string) => void = () => {}): Promise<string> {
  if (existsSync(join(dir, 'index.html')) && pageIsCurrent(dir)) return dir;
  log('building the viewer page (esbuild)');
  await buildPage(dir);
  return dir;
}

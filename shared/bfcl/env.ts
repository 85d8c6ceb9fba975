// The Python environment the BFCL process runs in: `bfcl-eval` installed WITHOUT its declared dependencies
// (anthropic, cohere, torch, …) plus the two packages its environments and checker import, pinned with hashes in
// requirements.lock, in `.cache/bfcl-env`. `ensureBfclEnv` creates it once and again when the lock changes
// (`toolrl bfcl setup` runs it; so do the tool kind and the reward on first use). `TOOLRL_BFCL_PYTHON` points
// at a prepared interpreter instead (the tool-call container image).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = join(HERE, '..', '..', '..');

/** Put on PYTHONPATH: the `toolrl_bfcl` package (the process's own code, read from the checkout). */
export const BFCL_PACKAGE_DIR = join(HERE, 'python');
export const BFCL_LOCK = join(HERE, 'requirements.lock');
export const DEFAULT_BFCL_ENV_DIR = join(REPO_ROOT, '.cache', 'bfcl-env');
const STAMP = '.toolrl-lock.sha256';

/** The interpreter to run: an explicit one, else `TOOLRL_BFCL_PYTHON`, else the one `ensureBfclEnv` creates. */
export function bfclPython(explicit?: string, envDir = DEFAULT_BFCL_ENV_DIR): string {
  return explicit ?? process.env.TOOLRL_BFCL_PYTHON ?? join(envDir, 'bin', 'python');
}

export interface EnsureOptions {
  /** An interpreter that already has the packages: nothing is installed. */
  python?: string;
  envDir?: string;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

export interface EnvInfo {
  python: string;
  /** True when this call installed the packages. */
  created: boolean;
}

const lockHash = (): string => createHash('sha256').update(readFileSync(BFCL_LOCK)).digest('hex');

/** uv from the learner's venv (`npm run setup` installs it) or the PATH; null when there is none. */
function findUv(): string | null {
  const local = join(REPO_ROOT, 'gpu-worker', '.venv', 'bin', 'uv');
  if (existsSync(local)) return local;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'uv'))) return join(dir, 'uv');
  }
  return null;
}

/** A Python >= 3.10 to base the environment on (bfcl-eval's floor), as scripts/setup.sh picks one. */
async function basePython(): Promise<string> {
  const candidates = [process.env.TOOLRL_PYTHON, 'python3.11', 'python3.12', 'python3'].filter(
    (c): c is string => !!c,
  );
  for (const c of candidates) {
    try {
      await run(c, ['-c', 'import sys; sys.exit(sys.version_info < (3, 10))']);
      return c;
    } catch {}
  }
  throw new Error('the BFCL environment needs Python >= 3.10 (set TOOLRL_PYTHON to one)');
}

/**
 * The interpreter to use without installing anything: an explicit one (or `TOOLRL_BFCL_PYTHON`) that exists, or
 * the environment `ensureBfclEnv` made, if it is current; null when `toolrl bfcl setup` has not been run.
 */
export function readyBfclPython(explicit?: string, envDir = DEFAULT_BFCL_ENV_DIR): string | null {
  const given = explicit ?? process.env.TOOLRL_BFCL_PYTHON;
  // A bare command name is looked up on PATH when run; a path must exist.
  if (given) return !given.includes('/') || existsSync(given) ? given : null;
  const python = join(envDir, 'bin', 'python');
  return existsSync(python) && readStamp(envDir) === lockHash() ? python : null;
}

/** Creates (or refreshes, when the lock changed) the environment; a no-op when it is current. */
export async function ensureBfclEnv(opts: EnsureOptions = {}): Promise<EnvInfo> {
  const explicit = opts.python ?? process.env.TOOLRL_BFCL_PYTHON;
  if (explicit) return { python: explicit, created: false };
  const envDir = opts.envDir ?? DEFAULT_BFCL_ENV_DIR;
  const python = join(envDir, 'bin', 'python');
  const want = lockHash();
  const current = () => existsSync(python) && readStamp(envDir) === want;
  if (current()) return { python, created: false };

  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  log(`bfcl: installing bfcl-eval and its environment packages into ${envDir} (once)`);
  // Built beside the target and renamed into place, so a parallel caller never sees half an environment.
  const building = `${envDir}.building-${process.pid}-${Date.now()}`;
  try {
    const uv = findUv();
    const base = await basePython();
    if (uv) {
      await run(uv, ['venv', '-q', '--python', base, building]);
      await run(uv, ['pip', 'install', '-q', '--no-deps', '--require-hashes', '-r', BFCL_LOCK], {
        env: { ...process.env, VIRTUAL_ENV: building },
      });
    } else {
      await run(base, ['-m', 'venv', building]);
      const pip = [join(building, 'bin', 'python'), '-m', 'pip', 'install', '-q'] as const;
      await run(pip[0], [...pip.slice(1), '--no-deps', '--require-hashes', '-r', BFCL_LOCK]);
    }
    writeFileSync(join(building, STAMP), `${want}\n`);
    if (existsSync(envDir)) {
      if (current()) return { python, created: false }; // another process finished first
      const old = `${envDir}.old-${process.pid}-${Date.now()}`;
      renameSync(envDir, old);
      rmSync(old, { recursive: true, force: true });
    }
    try {
      renameSync(building, envDir);
    } catch (err) {
      if (!current()) throw err;
    }
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`could not create the BFCL environment in ${envDir}: ${e.stderr?.trim() || e.message}`);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  log(`bfcl: environment ready (${python})`);
  return { python, created: true };
}

function readStamp(envDir: string): string | null {
  try {
    return readFileSync(join(envDir, STAMP), 'utf8').trim();
  } catch {
    return null;
  }
}

/** Recompiles requirements.lock from requirements.in (exact pins with hashes, no dependencies resolved). */
export async function relockBfclEnv(): Promise<void> {
  const uv = findUv();
  if (!uv)
    throw new Error('relocking needs uv: run `npm run setup` first (it installs uv into gpu-worker/.venv)');
  // Relative names, run from this folder, so the lock's `# via` comments carry no machine paths.
  const args = [
    'pip',
    'compile',
    'requirements.in',
    '--no-deps',
    '--generate-hashes',
    '--python-version',
    '3.11',
  ];
  await run(uv, [...args, '--no-header', '-q', '-o', 'requirements.lock'], { cwd: HERE });
}

// The tiny model and its rollout bundle for tests and benchmarks, built once by the learner's own CLI
// (`python -m toolrl_learner tiny|export`) into .cache/fixtures/<hash of the model and export sources>/ and reused
// until those sources change. Safe to call from parallel test workers: one builds, the others wait for it.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const LEARNER_PYTHON = join(REPO_ROOT, 'gpu-worker', '.venv', 'bin', 'python');

export interface TinyFixture {
  /** Hugging Face model folder (config.json, model.safetensors, tokenizer files). */
  modelDir: string;
  /** Rollout bundle exported from it (model.onnx, model.onnx.data, tokenizer files, manifest.json). */
  bundleDir: string;
}

export interface TinyOptions {
  /** Weight-only quantisation of the bundle (the model folder is shared). Default none. */
  quantization?: 'none' | 'int8' | 'int4';
  /** Real dimensions and vocabulary, random weights (`tiny --preset`), for benchmarks: ~2 GB in fp32. */
  preset?: 'qwen2.5-0.5b' | 'qwen2.5-1.5b';
  /** The graph's operators (`export --variant`, GRAPH.md); the weights file is the same. Default standard. */
  variant?: 'standard' | 'contrib';
  /** Weights per quantisation block (`export --block-size`) for int8/int4. Default 32, the export's. */
  blockSize?: number;
}

const SOURCES = ['gpu-worker/toolrl_learner/model', 'gpu-worker/toolrl_learner/export'];

function sourceHash(): string {
  const h = createHash('sha256');
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (name === '__pycache__') continue;
      if (statSync(path).isDirectory()) walk(path);
      else {
        h.update(relative(REPO_ROOT, path));
        h.update(readFileSync(path));
      }
    }
  };
  for (const s of SOURCES) walk(join(REPO_ROOT, s));
  h.update(readFileSync(join(REPO_ROOT, 'gpu-worker', 'toolrl_learner', '__main__.py')));
  return h.digest('hex').slice(0, 16);
}

export async function learner(args: string[]): Promise<void> {
  try {
    await run(LEARNER_PYTHON, ['-m', 'toolrl_learner', ...args], { cwd: REPO_ROOT, maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`python -m toolrl_learner ${args.join(' ')} failed: ${e.stderr || e.message}`);
  }
}

/** Whether the process that holds `lock` still runs (a lock just made may not have its pid file yet). */
function builderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    const s = statSync(lock, { throwIfNoEntry: false });
    return s !== undefined && Date.now() - s.mtimeMs < 10_000;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Builds `target` with `build(tmp)` unless it exists; one builder at a time across processes (a lock folder). */
export async function once(target: string, build: (tmp: string) => Promise<void>): Promise<void> {
  const lock = `${target}.lock`;
  for (;;) {
    if (existsSync(target)) return;
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      // Another worker is building; a lock whose builder is gone (a killed run) is taken over.
      if (existsSync(lock) && !builderAlive(lock)) rmSync(lock, { recursive: true, force: true });
      await sleep(250);
    }
  }
  try {
    if (existsSync(target)) return;
    const tmp = `${target}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    await build(tmp);
    renameSync(tmp, target);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

const built = new Map<string, Promise<TinyFixture>>();

/** The tiny test model and its bundle; built on first use (a few seconds), then read from .cache/fixtures. */
export function tinyBundle(opts: TinyOptions = {}): Promise<TinyFixture> {
  const q = opts.quantization ?? 'none';
  const preset = opts.preset;
  const variant = opts.variant ?? 'standard';
  const blockSize = opts.blockSize ?? 32;
  const key = `${preset ?? 'tiny'}/${q}/${variant}/${blockSize}`;
  let p = built.get(key);
  if (!p) {
    p = (async () => {
      const root = fixtureRoot();
      const modelDir = join(root, preset ? `model-${preset}` : 'model');
      const variantSuffix = variant === 'standard' ? '' : `-${variant}`;
      const blockSuffix = q === 'none' || blockSize === 32 ? '' : `-b${blockSize}`;
      const suffix = variantSuffix + blockSuffix;
      const bundleDir = join(root, `${preset ? `bundle-${preset}-${q}` : `bundle-${q}`}${suffix}`);
      await once(modelDir, (tmp) => learner(['tiny', '--out', tmp, ...(preset ? ['--preset', preset] : [])]));
      await once(bundleDir, (tmp) =>
        learner([
          'export',
          '--model',
          modelDir,
          '--out',
          tmp,
          '--quantization',
          q,
          '--block-size',
          String(blockSize),
        ]),
      );
      return { modelDir, bundleDir };
    })();
    built.set(key, p);
  }
  return p;
}

/** This checkout's fixture folder (.cache/fixtures/<hash of the model and export sources>), made on first use. */
export function fixtureRoot(): string {
  const hash = sourceHash();
  const fixtures = join(REPO_ROOT, '.cache', 'fixtures');
  pruneStale(fixtures, hash);
  const root = join(fixtures, hash);
  mkdirSync(root, { recursive: true });
  return root;
}

/** Removes fixtures built from older sources (untouched for an hour), so .cache does not grow with every edit. */
function pruneStale(fixtures: string, current: string): void {
  if (!existsSync(fixtures)) return;
  for (const name of readdirSync(fixtures)) {
    const path = join(fixtures, name);
    if (name === current || !/^[0-9a-f]{16}$/.test(name)) continue;
    if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
  }
}

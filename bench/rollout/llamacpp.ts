// bench/rollout's llama.cpp reference, set up on first use and never a dependency of the product: node-llama-cpp
// (pinned with its prebuilt linux-x64 CPU binary in bench/rollout/llamacpp/package-lock.json, installed with install
// scripts off, so nothing is downloaded or built beyond the npm registry's packages) and llama.cpp's `gguf` package
// (bench/rollout/llamacpp/requirements.lock) in .cache/peer-llamacpp; and the GGUF of a bundle's source weights.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What llama.cpp runs for each bundle type: the GGUF type of the same weights. */
export const GGUF_TYPES = { fp32: 'f32', int8: 'q8_0', int4: 'q4_0' } as const;
export type GgufType = (typeof GGUF_TYPES)[keyof typeof GGUF_TYPES];

/**
 * The GGUF type llama.cpp runs against a bundle (its table label, e.g. "int4 (block 128)"): int4 -> Q4_0 and
 * int8 -> Q8_0 whatever the engine's block size (GGUF's are fixed at 32), fp32 -> F32.
 */
export function ggufTypeFor(label: string): GgufType {
  const base = /^(fp32|int8|int4)\b/.exec(label)?.[1] as keyof typeof GGUF_TYPES | undefined;
  if (!base) throw new Error(`no GGUF type for bundle ${label}`);
  return GGUF_TYPES[base];
}

export interface LlamaCppSetup {
  /** node-llama-cpp's entry module, for the measuring child to import. */
  module: string;
  /** The Python with `gguf` installed. */
  python: string;
  /** Versions, for the report. */
  versions: { nodeLlamaCpp: string; llamaCpp: string; gguf: string };
}

async function step(cmd: string, args: string[], cwd: string, what: string): Promise<string> {
  try {
    return (await run(cmd, args, { cwd, maxBuffer: 64 << 20 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${what} failed: ${e.stderr || e.message}`);
  }
}

/** Installs what a lock names into `dir` unless the stamp says that lock is already installed there. */
async function installed(dir: string, lock: string, install: () => Promise<void>): Promise<void> {
  const stamp = join(dir, '.lock.sha');
  const want = createHash('sha256').update(readFileSync(lock)).digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return;
  await install();
  writeFileSync(stamp, want);
}

/** The venv with llama.cpp's `gguf` package (and numpy, safetensors), created on first use; its Python. */
export async function ensureGgufPython(repo: string, log: (msg: string) => void): Promise<string> {
  const lock = join(repo, 'bench', 'rollout', 'llamacpp', 'requirements.lock');
  const venv = join(repo, '.cache', 'peer-llamacpp', 'venv');
  const python = join(venv, 'bin', 'python');
  await installed(venv, lock, async () => {
    log(`installing gguf (bench/rollout/llamacpp/requirements.lock) into ${venv}`);
    const uv = join(repo, 'gpu-worker', '.venv', 'bin', 'uv');
    rmSync(venv, { recursive: true, force: true });
    await step(uv, ['venv', '-q', '--python', '3.11', venv], repo, 'uv venv');
    await step(uv, ['pip', 'sync', '-q', '--python', python, lock], repo, 'uv pip sync');
  });
  return python;
}

export async function ensureLlamaCpp(repo: string, log: (msg: string) => void): Promise<LlamaCppSetup> {
  if (platform() !== 'linux' || arch() !== 'x64')
    throw new Error(
      `the llama.cpp reference pins node-llama-cpp's linux-x64 CPU binary; this is ${platform()}-${arch()} (--no-llama-cpp skips it)`,
    );
  const src = join(repo, 'bench', 'rollout', 'llamacpp');
  const root = join(repo, '.cache', 'peer-llamacpp');
  const node = join(root, 'node');
  mkdirSync(root, { recursive: true });
  await installed(node, join(src, 'package-lock.json'), async () => {
    log(`installing node-llama-cpp (bench/rollout/llamacpp/package-lock.json) into ${node}`);
    rmSync(node, { recursive: true, force: true });
    mkdirSync(node, { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(src, f), join(node, f));
    // --omit=optional: node-llama-cpp lists every platform's and GPU's binaries as optional; the one CPU build
    // this bench runs is a direct dependency, so the install is ~80 MB instead of ~700.
    await step(
      'npm',
      ['ci', '--ignore-scripts', '--omit=optional', '--no-audit', '--no-fund'],
      node,
      'npm ci (node-llama-cpp)',
    );
  });
  const python = await ensureGgufPython(repo, log);
  const pkg = (p: string) =>
    JSON.parse(readFileSync(join(node, 'node_modules', p, 'package.json'), 'utf8')) as { version: string };
  const bins = join(node, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64');
  const meta = JSON.parse(readFileSync(join(bins, '_nlcBuildMetadata.json'), 'utf8')) as {
    buildOptions: { llamaCpp: { release: string } };
  };
  const gguf = (
    await step(
      python,
      ['-c', 'import importlib.metadata as m; print(m.version("gguf"))'],
      repo,
      'gguf version',
    )
  ).trim();
  return {
    module: join(node, 'node_modules', 'node-llama-cpp', 'dist', 'index.js'),
    python,
    versions: {
      nodeLlamaCpp: pkg('node-llama-cpp').version,
      llamaCpp: meta.buildOptions.llamaCpp.release,
      gguf,
    },
  };
}

/**
 * The GGUF of a Hugging Face model folder in `type`, written beside the folder (so it goes when the fixture does)
 * and reused until the folder's weights or the writer change.
 */
export async function ggufOf(
  setup: Pick<LlamaCppSetup, 'python'>,
  repo: string,
  modelDir: string,
  type: GgufType,
  log: (msg: string) => void,
): Promise<string> {
  const script = join(repo, 'bench', 'rollout', 'llamacpp', 'gguf_from_hf.py');
  const key = createHash('sha256').update(readFileSync(script)).update(modelDir).digest('hex').slice(0, 8);
  const out = join(dirname(modelDir), `${basename(modelDir)}-${type}-${key}.gguf`);
  if (!existsSync(out)) {
    log(`writing ${out} (${type}) from ${modelDir}`);
    await step(setup.python, [script, modelDir, out, '--type', type], repo, 'gguf_from_hf.py');
  }
  return out;
}

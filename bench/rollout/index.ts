// `npx tsx bench/rollout/index.ts`: the rollout engine at Qwen2.5-0.5B's dimensions (random weights, fp32 and
// int4 bundles) against transformers.js `generate()` on the same bundle, against llama.cpp (node-llama-cpp's CPU
// build, set up by llamacpp.ts) on a GGUF of the same weights (int4 -> Q4_0, int8 -> Q8_0, fp32 -> F32), and
// against the memory-bandwidth bound (weight bytes one decode step reads over a copy bandwidth measured in each
// round).
//
// Method: per bundle and batch size, every engine loads in its own process and warms up once on the measured
// shape; then `--rounds` rounds each measure the copy bandwidth and run the engines back to back, the order
// rotating between rounds, so a load swing on a shared machine hits every side of a ratio instead of one. Every figure is reported as the median and range over the rounds. Prints the tables and
// rewrites their block in the "Rollout engine" section of BENCHMARKS.md (the section's prose is kept).
//
// Quick sanity run (a few minutes): --dtypes int4 --new-tokens 32 --rounds 3 --no-write
//
// --model smollm2-135m: the real model instead of a preset's random weights: its bundles exported from the folder
// `toolrl_learner model fetch` converts, llama.cpp on the GGUF the model ships as (SmolLM2-135M-Instruct.Q4_1.gguf,
// unconverted, whatever the bundle's type), a top-5 agreement check on a chat prompt (agreement.ts), and its own
// generated block in BENCHMARKS.md.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { readBundle } from '#shared/policy/bundle';
import { REAL_MODELS, realModel, realModelBundle, realModelName } from '../support/real-model.ts';
import { LEARNER_PYTHON, REPO_ROOT, tinyBundle } from '../support/tiny-model.ts';
import { type Agreement, agreementPrompt, compareTops } from './agreement.ts';
import { copyBandwidth } from './bandwidth.ts';
import { Child, type Measurement, type ProbeResult } from './child.ts';
import { ensureLlamaCpp, ggufOf, ggufTypeFor } from './llamacpp.ts';
import { type Round, type Row, renderTables, replaceTables } from './report.ts';

const USAGE =
  'usage: npx tsx bench/rollout/index.ts [--dtypes fp32,int4] [--n 8] [--prompt-tokens 128] [--new-tokens 256]\n' +
  '         [--rounds 3] [--warmup-tokens 16] [--threads <cores>] [--sampler onnx|js] [--graph slots|standard]\n' +
  '         [--preset qwen2.5-0.5b|qwen2.5-1.5b|tiny] [--bundles DIR[,DIR]] [--skip-reference] [--no-llama-cpp]\n' +
  '         [--model smollm2-135m] [--llama-cpp-top-k 0|K] [--agreement-tokens 16] [--no-write]\n' +
  "  --model: a built-in real model (model.path's name; smollm2-135m-instruct): its bundles exported from the\n" +
  '    converted folder, llama.cpp on the GGUF it ships as (unconverted), a top-5 agreement check on the first\n' +
  '    --agreement-tokens positions of a chat prompt, and its own block in BENCHMARKS.md\n' +
  "  --llama-cpp-top-k: llama.cpp's sampler (0, the default: full vocabulary like the engine; 1: greedy, its\n" +
  '    decode with next to no sampling cost)\n' +
  "  --skip-reference: no transformers.js; --no-llama-cpp: no llama.cpp (it needs the preset's model folder, so\n" +
  '    --bundles skips it)\n' +
  "  --graph: the graph the engine decodes with (slots, the default: model.slots.onnx, the cache in the engine's\n" +
  '    buffers; standard: model.onnx, the cache copied in and out every step)\n' +
  '  --dtypes: fp32, int8, int4; int8/N or int4/N quantises in blocks of N weights (default 32)\n' +
  '  --bundles: measure these bundle folders (their manifest names the dtype) instead of building --dtypes\n';

const { values } = parseArgs({
  options: {
    dtypes: { type: 'string', default: 'fp32,int4' },
    n: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '128' },
    'new-tokens': { type: 'string', default: '256' },
    rounds: { type: 'string', default: '3' },
    'warmup-tokens': { type: 'string', default: '16' },
    threads: { type: 'string', default: String(availableParallelism()) },
    sampler: { type: 'string', default: 'onnx' },
    graph: { type: 'string', default: 'slots' },
    preset: { type: 'string', default: 'qwen2.5-0.5b' },
    model: { type: 'string' },
    'agreement-tokens': { type: 'string', default: '16' },
    bundles: { type: 'string' },
    'skip-reference': { type: 'boolean', default: false },
    'llama-cpp': { type: 'boolean', default: true },
    'llama-cpp-top-k': { type: 'string', default: '0' },
    write: { type: 'boolean', default: true },
    help: { type: 'boolean', default: false },
  },
  allowNegative: true,
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
function positive(name: string): number {
  const raw = values[name as 'n'];
  const v = Number(raw);
  if (!(Number.isInteger(v) && v >= 1)) {
    process.stderr.write(`--${name} must be an integer >= 1, got ${raw}\n${USAGE}`);
    process.exit(2);
  }
  return v;
}
const G = positive('n');
const rounds = positive('rounds');
const threads = positive('threads');
const warmupTokens = positive('warmup-tokens');
const llamaTopK = values['llama-cpp-top-k']!;
if (!/^\d+$/.test(llamaTopK)) {
  process.stderr.write(`--llama-cpp-top-k must be an integer >= 0, got ${llamaTopK}\n${USAGE}`);
  process.exit(2);
}
const agreementTokens = positive('agreement-tokens');
const realName = values.model === undefined ? undefined : realModelName(values.model);
if (values.model !== undefined && !realName) {
  process.stderr.write(`--model: unknown ${values.model} (${REAL_MODELS.join(', ')})\n${USAGE}`);
  process.exit(2);
}
if (realName && values.bundles) {
  process.stderr.write(`--model and --bundles exclude each other\n${USAGE}`);
  process.exit(2);
}
positive('prompt-tokens');
positive('new-tokens');
if (!['onnx', 'js'].includes(values.sampler!)) {
  process.stderr.write(`--sampler must be onnx or js, got ${values.sampler}\n${USAGE}`);
  process.exit(2);
}
if (!['slots', 'standard'].includes(values.graph!)) {
  process.stderr.write(`--graph must be slots or standard, got ${values.graph}\n${USAGE}`);
  process.exit(2);
}
const childArgs = (bundle: string, n: number) => [
  '--bundle',
  bundle,
  '--n',
  String(n),
  '--prompt-tokens',
  values['prompt-tokens']!,
  '--new-tokens',
  values['new-tokens']!,
  '--threads',
  String(threads),
  '--warmup-tokens',
  String(warmupTokens),
  '--sampler',
  values.sampler!,
  '--graph',
  values.graph!,
];
const log = (msg: string) => process.stderr.write(`[bench/rollout] ${msg}\n`);
const run = promisify(execFile);

async function weightBytes(bundle: string): Promise<number> {
  const { stdout } = await run(LEARNER_PYTHON, [
    join(REPO_ROOT, 'bench', 'rollout', 'weight_bytes.py'),
    join(bundle, 'model.onnx'),
  ]);
  return (JSON.parse(stdout) as { weightBytes: number }).weightBytes;
}

/** A bundle's name in the tables: fp32, or the quantisation with its block size when not the export's default. */
const label = (quantization: string, blockSize: number) =>
  quantization === 'none' ? 'fp32' : blockSize === 32 ? quantization : `${quantization} (block ${blockSize})`;

/** A bundle to measure, and the GGUF llama.cpp runs against it (written from modelDir, or a given file). */
interface Measured {
  dtype: string;
  dir: string;
  modelDir?: string;
  gguf?: { path: string; type: string };
}

/**
 * The bundles to measure: given folders, the real model's bundles per dtype (exported on first use) with its own
 * GGUF, or the preset's bundle per dtype (built on first use) and its model.
 */
async function bundles(): Promise<Measured[]> {
  if (values.bundles) {
    return Promise.all(
      values.bundles.split(',').map(async (dir) => {
        const { manifest } = await readBundle(dir);
        return { dtype: label(manifest.quantization, manifest.export?.blockSize ?? 32), dir };
      }),
    );
  }
  const out: Measured[] = [];
  for (const spec of values.dtypes!.split(',')) {
    const m = /^(fp32|int8|int4)(?:\/(\d+))?$/.exec(spec);
    if (!m || (m[1] === 'fp32' && m[2]))
      throw new Error(`--dtypes: unknown ${spec} (fp32, int8[/N], int4[/N])`);
    const blockSize = Number(m[2] ?? 32);
    const quantization = m[1] === 'fp32' ? 'none' : (m[1] as 'int4' | 'int8');
    const dtype = label(quantization, blockSize);
    if (realName) {
      log(`${dtype}: exporting/reusing the ${realName} bundle (first run: about a minute)`);
      const built = await realModelBundle(realName, { quantization, blockSize });
      // llama.cpp runs the file the model ships as, whatever the bundle's quantisation.
      const type = /\.([A-Za-z0-9_]+)\.gguf$/.exec(built.ggufName)?.[1] ?? 'gguf';
      out.push({ dtype, dir: built.bundleDir, gguf: { path: built.gguf, type } });
      continue;
    }
    log(`${dtype}: building/reusing the ${values.preset} bundle (first run: a few minutes)`);
    const preset = values.preset === 'tiny' ? {} : { preset: values.preset as 'qwen2.5-0.5b' };
    const built = await tinyBundle({ ...preset, quantization, blockSize });
    out.push({ dtype, dir: built.bundleDir, modelDir: built.modelDir });
  }
  return out;
}

const script = (name: string) => join(REPO_ROOT, 'bench', 'rollout', name);
const rows: Row[] = [];
const measured = await bundles();
const llamaCpp =
  values['llama-cpp'] && measured.some((b) => b.modelDir || b.gguf)
    ? await ensureLlamaCpp(REPO_ROOT, log)
    : undefined;
if (values['llama-cpp'] && !llamaCpp) log('--bundles: no model folder to convert, so no llama.cpp reference');
const agreements: Agreement[] = [];
/** llama.cpp's side of the agreement check, asked once per GGUF. */
const references = new Map<string, Promise<ProbeResult>>();
for (const { dtype, dir, modelDir, gguf: given } of measured) {
  const { manifest: m } = await readBundle(dir);
  const bytes = await weightBytes(dir);
  log(`${dtype}: ${(bytes / 1e6).toFixed(0)} MB of weights read per decode step (${dir})`);
  const gguf = !llamaCpp
    ? undefined
    : given
      ? given
      : modelDir
        ? {
            type: ggufTypeFor(dtype),
            path: await ggufOf(llamaCpp, REPO_ROOT, modelDir, ggufTypeFor(dtype), log),
          }
        : undefined;
  for (const n of G === 1 ? [1] : [G, 1]) {
    log(`${dtype}, G=${n}: loading and warming up the engines`);
    const sides: { key: 'ours' | 'ref' | 'llama'; name: string; child: Child }[] = [];
    try {
      sides.push({
        key: 'ours',
        name: 'engine',
        child: await Child.start(script('run-engine.ts'), childArgs(dir, n), REPO_ROOT),
      });
      if (!values['skip-reference'])
        sides.push({
          key: 'ref',
          name: 'transformers.js',
          child: await Child.start(script('run-transformers-js.ts'), childArgs(dir, n), REPO_ROOT),
        });
      if (gguf && llamaCpp)
        sides.push({
          key: 'llama',
          name: `llama.cpp ${gguf.type}`,
          child: await Child.start(
            script('run-llama-cpp.ts'),
            [
              ...childArgs(dir, n),
              '--gguf',
              gguf.path,
              '--llama-cpp-module',
              llamaCpp.module,
              '--top-k',
              llamaTopK,
            ],
            REPO_ROOT,
          ),
        });
      const ours = sides.find((x) => x.key === 'ours')!.child;
      const llamaSide = sides.find((x) => x.key === 'llama')?.child;
      if (realName && llamaSide && gguf && !agreements.some((x) => x.dtype === dtype)) {
        log(
          `${dtype}: top-5 agreement with llama.cpp on the first ${agreementTokens} tokens of a chat prompt`,
        );
        const prompt = await agreementPrompt(dir);
        let ref = references.get(gguf.path);
        if (!ref) {
          ref = llamaSide.probe({ prompt, k: agreementTokens, top: 5 });
          references.set(gguf.path, ref);
        }
        const r = await ref;
        const got = await ours.probe({
          prompt,
          k: agreementTokens,
          top: 5,
          follow: r.tokens,
          ask: r.top.map((t) => t.map((x) => x.id)),
        });
        agreements.push({ dtype, gguf: gguf.type, promptTokens: prompt.length, ...compareTops(r, got) });
      }
      const done: Round[] = [];
      for (let r = 0; r < rounds; r++) {
        const bandwidth = Math.max(await copyBandwidth(bytes, 1, 3), await copyBandwidth(bytes, threads, 3));
        // Rotate who goes first, so a drift in load over a round does not always favour the same side.
        const got: Partial<Record<'ours' | 'ref' | 'llama', Measurement>> = {};
        for (let i = 0; i < sides.length; i++) {
          const side = sides[(r + i) % sides.length]!;
          got[side.key] = await side.child.run();
        }
        const round: Round = { bandwidth, ours: got.ours!, ref: got.ref, llama: got.llama };
        done.push(round);
        log(
          `${dtype}, G=${n}, round ${r + 1}/${rounds}: copy ${(bandwidth / 1e9).toFixed(2)} GB/s; ` +
            sides
              .map(({ key, name }) => {
                const x = got[key]!;
                return `${name} ${x.totalMs.toFixed(0)} ms (load ${x.loadAvg.toFixed(1)})`;
              })
              .join('; '),
        );
      }
      const cacheBytesPerToken = 2 * m.numLayers * m.numKeyValueHeads * m.headDim * 4;
      rows.push({
        dtype,
        G: n,
        weightBytes: bytes,
        cacheBytesPerToken,
        rounds: done,
        ...(gguf ? { gguf: gguf.type } : {}),
      });
    } finally {
      for (const { child } of sides) await child.stop();
    }
  }
}

const args = process.argv.slice(2);
const real = realName ? await realModel(realName) : undefined;
const tables = renderTables(rows, {
  ...(real ? { tag: real.name, agreements } : {}),
  command: `npx tsx bench/rollout/index.ts${args.length ? ` ${args.join(' ')}` : ''}`,
  machine: `${cpus()[0]?.model ?? 'CPU'}, ${cpus().length} cores`,
  threads,
  model: values.bundles
    ? `bundles ${values.bundles}`
    : real
      ? `${real.name}'s real weights (its bundles exported from the folder \`toolrl_learner model fetch\` converts ` +
        `${real.ggufName} into; llama.cpp runs ${real.ggufName} itself)`
      : `${values.preset}'s dimensions, random weights (\`toolrl_learner tiny --preset\`, then \`export\`)`,
  warmupTokens,
  graph: values.graph as 'slots' | 'standard',
  ...(llamaCpp
    ? {
        llamaTopK: Number(llamaTopK),
        llamaCpp:
          `node-llama-cpp ${llamaCpp.versions.nodeLlamaCpp} (llama.cpp ${llamaCpp.versions.llamaCpp}, its prebuilt ` +
          `linux-x64 CPU build), ${real ? `${real.ggufName} as shipped` : `GGUF written by gguf ${llamaCpp.versions.gguf}`}`,
      }
    : {}),
});
process.stdout.write(`\n${tables}\n`);
if (values.write) {
  const path = join(REPO_ROOT, 'BENCHMARKS.md');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n';
  writeFileSync(path, replaceTables(text, tables, real?.name));
  log(`wrote the tables of the "Rollout engine" section of ${path}`);
}

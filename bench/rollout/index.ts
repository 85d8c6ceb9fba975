// `npx tsx bench/rollout/index.ts`: the rollout engine at Qwen2.5-0.5B's dimensions (random weights, fp32 and
// int4 bundles) against transformers.js `generate()` on the same bundle and against the memory-bandwidth bound
// (weight bytes one decode step reads over a copy bandwidth measured in each round).
//
// Method: per bundle and batch size, both engines load in their own process and warm up once on the measured
// shape; then `--rounds` rounds each measure the copy bandwidth and run the engine and transformers.js back to
// back, the order alternating between rounds, so a load swing on a shared machine hits both sides of a ratio
// instead of one. Every figure is reported as the median and range over the rounds. Prints the tables and
// rewrites their block in the "Rollout engine" section of BENCHMARKS.md (the section's prose is kept).
//
// Quick sanity run (a few minutes): --dtypes int4 --new-tokens 32 --rounds 3 --no-write
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { readBundle } from '#shared/policy/bundle';
import { LEARNER_PYTHON, REPO_ROOT, tinyBundle } from '../support/tiny-model.ts';
import { copyBandwidth } from './bandwidth.ts';
import { Child } from './child.ts';
import { type Round, type Row, renderTables, replaceTables } from './report.ts';

const USAGE =
  'usage: npx tsx bench/rollout/index.ts [--dtypes fp32,int4] [--n 8] [--prompt-tokens 128] [--new-tokens 256]\n' +
  '         [--rounds 3] [--warmup-tokens 16] [--threads <cores>] [--sampler onnx|js]\n' +
  '         [--preset qwen2.5-0.5b|qwen2.5-1.5b|tiny] [--bundles DIR[,DIR]] [--skip-reference] [--no-write]\n' +
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
    preset: { type: 'string', default: 'qwen2.5-0.5b' },
    bundles: { type: 'string' },
    'skip-reference': { type: 'boolean', default: false },
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
positive('prompt-tokens');
positive('new-tokens');
if (!['onnx', 'js'].includes(values.sampler!)) {
  process.stderr.write(`--sampler must be onnx or js, got ${values.sampler}\n${USAGE}`);
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

/** The bundles to measure: given folders, or the preset's bundle per dtype (built on first use). */
async function bundles(): Promise<{ dtype: string; dir: string }[]> {
  if (values.bundles) {
    return Promise.all(
      values.bundles.split(',').map(async (dir) => {
        const { manifest } = await readBundle(dir);
        return { dtype: label(manifest.quantization, manifest.export?.blockSize ?? 32), dir };
      }),
    );
  }
  const out: { dtype: string; dir: string }[] = [];
  for (const spec of values.dtypes!.split(',')) {
    const m = /^(fp32|int8|int4)(?:\/(\d+))?$/.exec(spec);
    if (!m || (m[1] === 'fp32' && m[2]))
      throw new Error(`--dtypes: unknown ${spec} (fp32, int8[/N], int4[/N])`);
    const blockSize = Number(m[2] ?? 32);
    const quantization = m[1] === 'fp32' ? 'none' : (m[1] as 'int4' | 'int8');
    const dtype = label(quantization, blockSize);
    log(`${dtype}: building/reusing the ${values.preset} bundle (first run: a few minutes)`);
    const preset = values.preset === 'tiny' ? {} : { preset: values.preset as 'qwen2.5-0.5b' };
    out.push({ dtype, dir: (await tinyBundle({ ...preset, quantization, blockSize })).bundleDir });
  }
  return out;
}

const script = (name: string) => join(REPO_ROOT, 'bench', 'rollout', name);
const rows: Row[] = [];
for (const { dtype, dir } of await bundles()) {
  const { manifest: m } = await readBundle(dir);
  const bytes = await weightBytes(dir);
  log(`${dtype}: ${(bytes / 1e6).toFixed(0)} MB of weights read per decode step (${dir})`);
  for (const n of G === 1 ? [1] : [G, 1]) {
    log(`${dtype}, G=${n}: loading and warming up both engines`);
    const ours = await Child.start(script('run-engine.ts'), childArgs(dir, n), REPO_ROOT);
    const ref = values['skip-reference']
      ? undefined
      : await Child.start(script('run-transformers-js.ts'), childArgs(dir, n), REPO_ROOT);
    const done: Round[] = [];
    try {
      for (let r = 0; r < rounds; r++) {
        const bandwidth = Math.max(await copyBandwidth(bytes, 1, 3), await copyBandwidth(bytes, threads, 3));
        // Alternate who goes first, so a drift in load over a round does not always favour the same side.
        const engineFirst = r % 2 === 0;
        const a = engineFirst || !ref ? await ours.run() : await ref.run();
        const b = ref ? (engineFirst ? await ref.run() : await ours.run()) : undefined;
        const round: Round =
          engineFirst || !ref ? { bandwidth, ours: a, ref: b } : { bandwidth, ours: b!, ref: a };
        done.push(round);
        log(
          `${dtype}, G=${n}, round ${r + 1}/${rounds}: copy ${(bandwidth / 1e9).toFixed(2)} GB/s; engine ` +
            `${round.ours.totalMs.toFixed(0)} ms (load ${round.ours.loadAvg.toFixed(1)})` +
            (round.ref
              ? `; transformers.js ${round.ref.totalMs.toFixed(0)} ms (load ${round.ref.loadAvg.toFixed(1)})`
              : ''),
        );
      }
    } finally {
      await ours.stop();
      await ref?.stop();
    }
    const cacheBytesPerToken = 2 * m.numLayers * m.numKeyValueHeads * m.headDim * 4;
    rows.push({ dtype, G: n, weightBytes: bytes, cacheBytesPerToken, rounds: done });
  }
}

const args = process.argv.slice(2);
const tables = renderTables(rows, {
  command: `npx tsx bench/rollout/index.ts${args.length ? ` ${args.join(' ')}` : ''}`,
  machine: `${cpus()[0]?.model ?? 'CPU'}, ${cpus().length} cores`,
  threads,
  model: values.bundles
    ? `bundles ${values.bundles}`
    : `${values.preset}'s dimensions, random weights (\`toolrl_learner tiny --preset\`, then \`export\`)`,
  warmupTokens,
});
process.stdout.write(`\n${tables}\n`);
if (values.write) {
  const path = join(REPO_ROOT, 'BENCHMARKS.md');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n';
  writeFileSync(path, replaceTables(text, tables));
  log(`wrote the tables of the "Rollout engine" section of ${path}`);
}

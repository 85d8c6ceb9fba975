// `npx tsx bench/rollout/scale.ts`: what CPU rollouts (the onnxruntime-node engine the rollout Lambda runs) can
// carry as the model grows: Qwen2.5-0.5B, 1.5B and 3B shapes with random weights, int8 and int4 bundles (written
// tensor by tensor by `python -m toolrl_learner export --random-preset`, so a 3B model never exists in fp32 here),
// G = 8 samples of one prompt decoded as a batch. Per bundle: sampled tokens per second on this machine's cores
// (prefill included), the measuring process's peak memory against Lambda's 10,240 MB, and a projection to a 10 GB
// Lambda (6 vCPUs) with its cost per million sampled tokens, beside the learner's GPU hour. Rewrites the table of the
// "Rollout scale" section of BENCHMARKS.md (between its markers).
//
// The projection is an estimate, not a measurement on Lambda: tokens/s grow with vCPUs as they grew here from one
// thread to two on the same bundle (t(k) = t(2) x (k/2)^a, a = log2(t(2)/t(1))), and Lambda bills 10 GB-seconds at
// $0.0000166667 per GB-second (x86, us-east-1; the rollout image is x86), $0.60 an hour. The learner's side is a
// projection too (no GPU measured here): a trained token costs 8 x parameters FLOPs (forward and backward 6, the
// reference policy's forward 2), at 35% of an A10G's 125 TFLOP/s dense bf16 on a g5.xlarge at $1.006 an hour
// (on-demand, us-east-1).
//
// Quick run: --presets qwen2.5-0.5b --dtypes int4 --new-tokens 32 --rounds 1 --no-write
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { LEARNER_PYTHON, REPO_ROOT } from '../support/tiny-model.ts';
import { Child, type Measurement } from './child.ts';
import { median } from './report.ts';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    presets: { type: 'string', default: 'qwen2.5-0.5b,qwen2.5-1.5b,qwen2.5-3b' },
    dtypes: { type: 'string', default: 'int8,int4' },
    n: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '128' },
    'new-tokens': { type: 'string', default: '128' },
    rounds: { type: 'string', default: '2' },
    threads: { type: 'string', default: String(cpus().length) },
    keep: { type: 'boolean', default: false },
    write: { type: 'boolean', default: true },
  },
  allowNegative: true,
});
const G = Number(values.n);
const N = Number(values['new-tokens']);
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const LAMBDA_GB = 10.24;
const LAMBDA_VCPUS = 6;
const LAMBDA_PER_GB_S = 0.0000166667;
const log = (msg: string) => process.stderr.write(`[bench/rollout/scale] ${msg}\n`);
const CACHE = join(REPO_ROOT, '.cache', 'bench', 'rollout-scale');

/** The bundle of a preset at a quantisation, written tensor by tensor on first use. */
async function bundle(preset: string, dtype: string): Promise<string> {
  const dir = join(CACHE, `${preset}-${dtype}`);
  if (existsSync(join(dir, 'manifest.json'))) return dir;
  log(`${preset} ${dtype}: writing the bundle (random weights, tensor by tensor)`);
  const args = [
    '-m',
    'toolrl_learner',
    'export',
    '--random-preset',
    preset,
    '--quantization',
    dtype,
    '--out',
    dir,
  ];
  await run(LEARNER_PYTHON, args, { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
  return dir;
}

async function weightBytes(dir: string): Promise<number> {
  const script = join(REPO_ROOT, 'bench', 'rollout', 'weight_bytes.py');
  const { stdout } = await run(LEARNER_PYTHON, [script, join(dir, 'model.onnx')]);
  return (JSON.parse(stdout) as { weightBytes: number }).weightBytes;
}

/** Sampled tokens per second of each round (G x N over the whole call, prefill included), and the peak memory. */
async function measure(dir: string, t: number): Promise<{ tps: number[]; maxRssMb: number }> {
  const args = ['--bundle', dir, '--n', String(G), '--prompt-tokens', values['prompt-tokens']!];
  args.push('--new-tokens', String(N), '--threads', String(t), '--warmup-tokens', '8');
  const child = await Child.start(join(REPO_ROOT, 'bench', 'rollout', 'run-engine.ts'), args, REPO_ROOT);
  const done: Measurement[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      done.push(await child.run());
      log(`  ${t} thread(s), round ${r + 1}/${rounds}: ${done.at(-1)!.totalMs.toFixed(0)} ms`);
    }
  } finally {
    await child.stop();
  }
  return {
    tps: done.map((m) => (G * N) / (m.totalMs / 1000)),
    maxRssMb: Math.max(...done.map((m) => m.maxRssMb ?? 0)),
  };
}

/** Parameters of the bundle's model, from its config.json (embedding once when tied). */
function parameters(dir: string): number {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number | boolean>;
  const [h, i, l, v] = [c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.vocab_size] as number[];
  const d = (c.head_dim as number) ?? h! / (c.num_attention_heads as number);
  const q = (c.num_attention_heads as number) * d;
  const kv = (c.num_key_value_heads as number) * d;
  const layer = 2 * h! * q + 2 * h! * kv + 3 * h! * i! + 2 * h!;
  return l! * layer + v! * h! * (c.tie_word_embeddings ? 1 : 2) + h!;
}

interface Row {
  preset: string;
  params: number;
  dtype: string;
  weightMb: number;
  maxRssMb: number;
  tps: number[];
}

const rows: Row[] = [];
let exponent: number | undefined;
for (const preset of values.presets!.split(',')) {
  for (const dtype of values.dtypes!.split(',')) {
    const dir = await bundle(preset, dtype);
    const bytes = await weightBytes(dir);
    log(
      `${preset} ${dtype}: ${(bytes / 1e6).toFixed(0)} MB of weights per decode step; G = ${G}, ${N} new tokens`,
    );
    const m = await measure(dir, threads);
    rows.push({
      preset,
      dtype,
      params: parameters(dir),
      weightMb: bytes / 1e6,
      maxRssMb: m.maxRssMb,
      tps: m.tps,
    });
    if (exponent === undefined && threads >= 2) {
      // How tokens/s grew with threads here, on the first bundle: the projection's scaling.
      const one = await measure(dir, 1);
      exponent = Math.log(median(m.tps) / median(one.tps)) / Math.log(threads);
      log(
        `scaling from 1 to ${threads} threads: ${(median(m.tps) / median(one.tps)).toFixed(2)}x (a = ${exponent.toFixed(2)})`,
      );
    }
    if (!values.keep && preset === 'qwen2.5-3b') rmSync(dir, { recursive: true, force: true });
  }
}

const a = exponent ?? 1;
const perHour = LAMBDA_GB * LAMBDA_PER_GB_S * 3600;
const fmt = (x: number, d = 1) => x.toFixed(d);
const range = (xs: number[]) => (xs.length > 1 ? ` (${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))})` : '');
const lines = [
  `\`npx tsx bench/rollout/scale.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}\` on ` +
    `${cpus()[0]?.model ?? 'CPU'}, ${cpus().length} cores, ${threads} onnxruntime threads; G = ${G}, ` +
    `${values['prompt-tokens']}-token prompt, ${N} new tokens per sample, ${rounds} round(s) (median, range). ` +
    `Projection to a ${LAMBDA_GB * 1000} MB Lambda (${LAMBDA_VCPUS} vCPUs): tokens/s x (${LAMBDA_VCPUS}/${threads})^${fmt(a, 2)}, ` +
    `$${fmt(perHour, 2)} per hour.`,
  '',
  '| shape | bundle | weights read per step (MB) | peak memory (MB) | fits 10,240 MB | tokens/s here | tokens/s projected, 10 GB Lambda | $ per 1M sampled tokens, Lambda |',
  '|---|---|---|---|---|---|---|---|',
];
for (const r of rows) {
  const here = median(r.tps);
  const projected = here * (LAMBDA_VCPUS / threads) ** a;
  const cost = (perHour / (projected * 3600)) * 1e6;
  lines.push(
    `| ${r.preset} | ${r.dtype} | ${fmt(r.weightMb, 0)} | ${fmt(r.maxRssMb, 0)} | ${r.maxRssMb < LAMBDA_GB * 1000 ? 'yes' : 'no'} | ` +
      `${fmt(here)}${range(r.tps)} | ${fmt(projected)} | ${fmt(cost, 2)} |`,
  );
}
const LEARNER = { flopsPerToken: 8, mfu: 0.35, peak: 125e12, perHour: 1.006 };
lines.push(
  '',
  '| shape | learner tokens/s, one A10G (projected) | $ per 1M trained tokens, g5.xlarge |',
  '|---|---|---|',
);
for (const r of rows.filter((r, i) => rows.findIndex((x) => x.preset === r.preset) === i)) {
  const tps = (LEARNER.mfu * LEARNER.peak) / (LEARNER.flopsPerToken * r.params);
  lines.push(
    `| ${r.preset} (${fmt(r.params / 1e9, 2)}B) | ${fmt(tps, 0)} | ${fmt((LEARNER.perHour / (tps * 3600)) * 1e6, 3)} |`,
  );
}
const table = lines.join('\n');
process.stdout.write(`\n${table}\n`);
if (values.write) {
  const BEGIN = '<!-- bench/rollout/scale: generated, begin -->';
  const END = '<!-- bench/rollout/scale: generated, end -->';
  const path = join(REPO_ROOT, 'BENCHMARKS.md');
  const text = readFileSync(path, 'utf8');
  if (!text.includes(BEGIN)) throw new Error(`${path} has no ${BEGIN} block`);
  const [head, rest] = text.split(BEGIN) as [string, string];
  writeFileSync(path, `${head}${BEGIN}\n${table}\n${END}${rest.split(END)[1]}`);
  log(`wrote the table of the "Rollout scale" section of ${path}`);
}

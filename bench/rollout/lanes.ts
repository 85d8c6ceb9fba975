// Two halves of a running batch decoded at once (a one-thread session here and one on a worker thread,
// SlotDecoder.forwardPair) against the whole batch on one session of two threads (the wider session the decoder
// used alone before), as a ratio in one script, on the same rows of the same cache: what the rollouts gain while the
// learner waits and lends them its core. Both sides must give the same bits; the script checks it on every pass.
//
//   npx tsx bench/rollout/lanes.ts [--bundle DIR] [--rows 16,32,48] [--cached 280] [--steps 16] [--rounds 3]
//
// Default bundle: SmolLM2-135M-Instruct in int8 (the examples/smollm2 rollouts' bundle, exported on first use).
// Rounds alternate which side goes first; the figure is the median over rounds, with the range.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readBundle } from '#shared/policy/bundle';
import { type SlotDecoder as Decoder, SLOTS_GRAPH_FILE, SlotDecoder } from '#shared/policy/slot-decoder';
import { realModelBundle } from '../support/real-model.ts';
import { cell } from './report.ts';

const { values } = parseArgs({
  options: {
    bundle: { type: 'string' },
    rows: { type: 'string', default: '16,32,48' },
    cached: { type: 'string', default: '280' },
    steps: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
  },
});
const rowsList = values.rows!.split(',').map(Number);
const cached = Number(values.cached);
const steps = Number(values.steps);
const rounds = Number(values.rounds);
const bundleDir =
  values.bundle ?? (await realModelBundle('smollm2-135m-instruct', { quantization: 'int8' })).bundleDir;
const m = (await readBundle(bundleDir)).manifest;
const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
const capacity = Math.ceil((cached + steps + 1) / 64) * 64;

/** A cache of `rows` rows at `cached` tokens (fixed pseudo-random keys and values) and its tokens. */
function half(rows: number, seed: number) {
  let s = seed >>> 0;
  const r = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
  const size = rows * kv.numKvHeads * capacity * kv.headDim;
  const fill = () => Float32Array.from({ length: size }, r);
  return {
    tokens: Array.from({ length: rows }, (_, b) => [100 + ((b * 37) % 1000)]),
    lengths: Array.from({ length: rows }, () => cached),
    past: {
      batch: rows,
      capacity,
      keys: Array.from({ length: kv.numLayers }, fill),
      values: Array.from({ length: kv.numLayers }, fill),
    },
    lastOnly: true,
  };
}

const path = join(bundleDir, SLOTS_GRAPH_FILE);
const spare = { threads: 2, free: () => true };
// `wide`: forward() only, so every pass runs on its two-thread session (once checked); `pairs`: forwardPair().
const wide: Decoder = await SlotDecoder.load(path, kv, m.vocabSize, {
  threads: 1,
  spare: { ...spare, threads: 2 },
});
const pairs: Decoder = await SlotDecoder.load(path, kv, m.vocabSize, { threads: 1, spare });
if (!(await wide.prepareSpare()) || !(await pairs.prepareLane()))
  throw new Error('could not build the two-thread session or the worker lane');

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
const rows: string[] = [];
for (const n of rowsList) {
  const a = half(n / 2, 1);
  const b = half(n - n / 2, 2);
  const whole = {
    ...half(n, 3),
    past: {
      batch: n,
      capacity,
      keys: a.past.keys.map((k, i) => concat(k, b.past.keys[i]!)),
      values: a.past.values.map((v, i) => concat(v, b.past.values[i]!)),
    },
    tokens: [...a.tokens, ...b.tokens],
    lengths: [...a.lengths, ...b.lengths],
  };
  // Warm-up, and the wider session's check (a pass of >= 32 rows runs on both of its sessions once).
  const check = half(32, 9);
  await wide.forward(whole.tokens, whole.lengths, whole.past, true);
  await wide.forward(check.tokens, check.lengths, check.past, true);
  await pairs.forwardPair(a, b);
  const ms = { wide: [] as number[], pairs: [] as number[] };
  const load: number[] = [];
  for (let round = 0; round < rounds; round++) {
    load.push(loadavg()[0]!);
    for (const side of round % 2 === 0 ? (['wide', 'pairs'] as const) : (['pairs', 'wide'] as const)) {
      const t0 = performance.now();
      for (let s = 0; s < steps; s++) {
        if (side === 'wide') await wide.forward(whole.tokens, whole.lengths, whole.past, true);
        else {
          const [x, y] = await pairs.forwardPair(a, b);
          if (s === 0) {
            const w = await wide.forward(whole.tokens, whole.lengths, whole.past, true);
            const split = w.logits.length / n;
            if (
              !bytes(w.logits.subarray(0, split * a.tokens.length)).equals(bytes(x.logits)) ||
              !bytes(w.logits.subarray(split * a.tokens.length)).equals(bytes(y.logits))
            )
              throw new Error(`${n} rows: the two halves computed other bits than the whole batch`);
          }
        }
      }
      ms[side].push((performance.now() - t0) / steps);
    }
  }
  const ratios = ms.wide.map((w, i) => w / ms.pairs[i]!);
  rows.push(
    `| ${n} | ${cell(ms.wide, 1)} | ${cell(ms.pairs, 1)} | ${cell(ratios, 2)}x | ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)} |`,
  );
}
await Promise.all([wide.dispose(), pairs.dispose()]);

console.log(
  `\`npx tsx bench/rollout/lanes.ts --rows ${values.rows} --cached ${cached} --steps ${steps} --rounds ${rounds}\` — ${values.bundle ?? 'SmolLM2-135M-Instruct int8'}, ` +
    `decode passes of one new token a row on ${cached} cached tokens; median (min-max) over ${rounds} rounds; the same bits checked each round.\n`,
);
console.log(
  '| rows | one 2-thread session, ms / pass | two halves at once (2 x 1 thread), ms / pass | speed-up | 1-min load |',
);
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(r);

function concat(x: Float32Array, y: Float32Array): Float32Array {
  const out = new Float32Array(x.length + y.length);
  out.set(x);
  out.set(y, x.length);
  return out;
}

// `npx tsx bench/rollout/batching.ts [--groups 8] [--n 8] [--prompt-tokens 190] [--new-tokens 36] [--rounds 5]
// [--preset tiny|qwen2.5-0.5b] [--dtype fp32|int4]`: what the rollouts of one process do with several groups in
// flight, the quickstart's shape by default (8 groups of 8 samples, a ~190-token prompt, ~36 sampled tokens each),
// three ways on the same bundle, in one process, alternating every round:
//   - standard, one at a time: the standard graph (model.onnx), one group after another (a rollout function that
//     runs one invocation at a time, as the embedded runtime did);
//   - standard, concurrent: the same graph with every group in flight at once (each decodes on its own batch; their
//     steps interleave);
//   - slots, concurrent: the slots graph (model.slots.onnx) with every group in flight, all rows in one running
//     batch (shared/policy/batcher.ts), as the rollouts run now.
// Prints each way's milliseconds (median and range over the rounds) and the ratios within each round. EOS is
// ignored, so every sample decodes exactly --new-tokens.
import { parseArgs } from 'node:util';
import { SlotBatcher } from '#shared/policy/batcher';
import { readBundle } from '#shared/policy/bundle';
import { type Decoding, emptyStats, StandardDecoding } from '#shared/policy/decode-loop';
import { KvCache } from '#shared/policy/kv-cache';
import { OnnxDecoder } from '#shared/policy/onnx-decoder';
import { DEFAULT_SAMPLING, Sampler } from '#shared/policy/sampler';
import { SamplerGraph } from '#shared/policy/sampler-graph';
import { SLOTS_GRAPH_FILE, SlotDecoder } from '#shared/policy/slot-decoder';
import { tinyBundle } from '../support/tiny-model.ts';
import { benchPrompt } from './prompt.ts';

const { values } = parseArgs({
  options: {
    groups: { type: 'string', default: '8' },
    n: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '190' },
    'new-tokens': { type: 'string', default: '36' },
    rounds: { type: 'string', default: '5' },
    threads: { type: 'string', default: '1' },
    preset: { type: 'string', default: 'tiny' },
    dtype: { type: 'string', default: 'fp32' },
  },
});
const int = (k: keyof typeof values): number => {
  const v = Number(values[k]);
  if (!(Number.isInteger(v) && v >= 1)) throw new Error(`--${k} must be an integer >= 1, got ${values[k]}`);
  return v;
};
const [groups, n, P, N, rounds, threads] = [
  int('groups'),
  int('n'),
  int('prompt-tokens'),
  int('new-tokens'),
  int('rounds'),
  int('threads'),
];
const preset = values.preset === 'tiny' ? undefined : (values.preset as 'qwen2.5-0.5b');
const quantization = values.dtype === 'int4' ? 'int4' : 'none';
const { bundleDir } = await tinyBundle({ ...(preset ? { preset } : {}), quantization });
const { manifest: m, modelPath, dir } = await readBundle(bundleDir);
const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
const sampler = new Sampler(m.vocabSize);
const graph = await SamplerGraph.create(m.vocabSize);
const stops = { eosIds: new Set<number>(), toolCallEndText: '</tool_call>', piece: () => '' };
const standard = new StandardDecoding(
  await OnnxDecoder.load(modelPath, kv, m.vocabSize, { threads }),
  sampler,
  graph,
  stops,
  emptyStats(),
);
const slots = new SlotBatcher(
  await SlotDecoder.load(`${dir}/${SLOTS_GRAPH_FILE}`, kv, m.vocabSize, { threads }),
  sampler,
  graph,
  stops,
  emptyStats(),
);
// Each group its own prompt (a different last token), as a batch's groups are different questions.
const prompts = Array.from({ length: groups }, (_, g) => [...benchPrompt(P - 1, m.vocabSize), 1000 + g]);
const params = { ...DEFAULT_SAMPLING, stopOnToolCallEnd: false, seed: 1, maxNewTokens: N };
const group = (d: Decoding, g: number) =>
  d.decodeRows({
    past: KvCache.empty(kv, 1),
    feed: prompts[g]!,
    rows: Array.from({ length: n }, (_, i) => ({ sampleIndex: i, turn: 0, budget: N })),
    params,
  });
const ways: Record<string, () => Promise<unknown>> = {
  'standard, one at a time': async () => {
    for (let g = 0; g < groups; g++) await group(standard, g);
  },
  'standard, concurrent': () => Promise.all(prompts.map((_, g) => group(standard, g))),
  'slots, concurrent': () => Promise.all(prompts.map((_, g) => group(slots, g))),
};
const names = Object.keys(ways);
for (const name of names) await ways[name]!(); // warm-up: arenas and kernels for these shapes
const ms: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const name of order) {
    const t0 = performance.now();
    await ways[name]!();
    ms[name]!.push(performance.now() - t0);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) =>
  `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;
const base = ms['standard, one at a time']!;
process.stdout.write(
  `\`npx tsx bench/rollout/batching.ts --groups ${groups} --n ${n} --prompt-tokens ${P} --new-tokens ${N} ` +
    `--rounds ${rounds} --preset ${values.preset} --dtype ${values.dtype}\`: ${groups} groups of ${n} samples, ` +
    `${groups * n * N} sampled tokens a round, ${threads} onnxruntime thread(s); median (min-max) over ${rounds} rounds.\n\n` +
    '| decoding | ms a round | tokens/s | vs standard, one at a time (same round) |\n|---|---|---|---|\n',
);
for (const name of names) {
  const ratios = ms[name]!.map((x, r) => base[r]! / x);
  process.stdout.write(
    `| ${name} | ${fmt(ms[name]!)} | ${((groups * n * N) / (median(ms[name]!) / 1000)).toFixed(0)} | ` +
      `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}) |\n`,
  );
}
await standard.dispose();
await slots.dispose();
await graph.dispose();

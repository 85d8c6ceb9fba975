// One measurement of the rollout engine (child process of bench/rollout/index.ts): G samples of a P-token prompt,
// N new tokens each, through the engine's own loop (one shared prefill, batched decode, the engine's sampler).
// EOS is ignored so every sample runs exactly N tokens, as transformers.js does with eos_token_id: null.
// Prints one JSON line of timings.
import { parseArgs } from 'node:util';
import { readBundle } from '#shared/policy/bundle';
import { decodeRows, emptyStats } from '#shared/policy/decode-loop';
import { KvCache } from '#shared/policy/kv-cache';
import { OnnxDecoder } from '#shared/policy/onnx-decoder';
import { DEFAULT_SAMPLING, Sampler } from '#shared/policy/sampler';
import { SamplerGraph } from '#shared/policy/sampler-graph';
import { benchPrompt } from './prompt.ts';

const { values } = parseArgs({
  options: {
    bundle: { type: 'string' },
    n: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '128' },
    'new-tokens': { type: 'string', default: '256' },
    threads: { type: 'string', default: '2' },
    sampler: { type: 'string', default: 'onnx' },
  },
});
const G = Number(values.n);
const P = Number(values['prompt-tokens']);
const N = Number(values['new-tokens']);
const { manifest: m, modelPath } = await readBundle(values.bundle!);
const t0 = performance.now();
const decoder = await OnnxDecoder.load(
  modelPath,
  { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim },
  m.vocabSize,
  { threads: Number(values.threads) },
);
const loadMs = performance.now() - t0;
const sampler = new Sampler(m.vocabSize);
const graph = values.sampler === 'js' ? undefined : await SamplerGraph.create(m.vocabSize);
const stops = { eosIds: new Set<number>(), toolCallEndText: '</tool_call>', piece: () => '' };
const params = { ...DEFAULT_SAMPLING, stopOnToolCallEnd: false, seed: 1 };
const run = (prompt: number[], n: number, budget: number, stats = emptyStats()) =>
  decodeRows({
    decoder,
    sampler,
    graph,
    past: KvCache.empty(decoder.kv, 1),
    feed: prompt,
    rows: Array.from({ length: n }, (_, i) => ({ sampleIndex: i, turn: 0, budget })),
    params: { ...params, maxNewTokens: budget },
    stops,
    stats,
  });

await run(benchPrompt(16, m.vocabSize), G, 3); // warm-up: first-run allocations and kernel selection
const stats = emptyStats();
const t1 = performance.now();
const rows = await run(benchPrompt(P, m.vocabSize), G, N, stats);
const totalMs = performance.now() - t1;
if (rows.some((r) => r.tokenIds.length !== N)) throw new Error('a row stopped early');
process.stdout.write(`${JSON.stringify({ engine: 'toolrl', G, P, N, loadMs, totalMs, ...stats })}\n`);
await decoder.dispose();
await graph?.dispose();

// The rollout engine's measuring process (started by bench/rollout/index.ts, child.ts's protocol): G samples of a
// P-token prompt, N new tokens each, through the engine's own loop (one shared prefill, batched decode, the
// engine's sampler), on the graph the engine runs: the slots graph (`--graph slots`, the default when the bundle
// has one: the cache stays in the engine's buffers) or the standard graph (`--graph standard`). EOS is ignored
// so every sample runs exactly N tokens, as transformers.js does with eos_token_id: null.
import { join } from 'node:path';
import { SlotBatcher } from '#shared/policy/batcher';
import { readBundle } from '#shared/policy/bundle';
import { type Decoding, emptyStats, StandardDecoding } from '#shared/policy/decode-loop';
import { KvCache } from '#shared/policy/kv-cache';
import { OnnxDecoder } from '#shared/policy/onnx-decoder';
import { DEFAULT_SAMPLING, Sampler } from '#shared/policy/sampler';
import { SamplerGraph } from '#shared/policy/sampler-graph';
import { SlotBatch } from '#shared/policy/slot-batch';
import { SLOTS_GRAPH_FILE, SlotDecoder } from '#shared/policy/slot-decoder';
import { childArgs, type ProbeRequest, type ProbeResult, serve, softmaxTop } from './child.ts';
import { benchPrompt } from './prompt.ts';

const a = childArgs();

await serve(
  async () => {
    const { manifest: m, modelPath, dir } = await readBundle(a.bundle);
    const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
    const sampler = new Sampler(m.vocabSize);
    // The engine's default: the sampling graph on its own 1-thread session (`--sampler js`: the plain-JS sampler).
    const graph = a.sampler === 'js' ? undefined : await SamplerGraph.create(m.vocabSize);
    const stops = { eosIds: new Set<number>(), toolCallEndText: '</tool_call>', piece: () => '' };
    const stats = emptyStats(); // the decoding counts into it; reset for every run
    const slots = a.graph === 'slots' && SLOTS_GRAPH_FILE in m.files;
    const decoder = slots
      ? await SlotDecoder.load(join(dir, SLOTS_GRAPH_FILE), kv, m.vocabSize, { threads: a.threads })
      : await OnnxDecoder.load(modelPath, kv, m.vocabSize, { threads: a.threads });
    const decoding: Decoding =
      decoder instanceof SlotDecoder
        ? new SlotBatcher(decoder, sampler, graph, stops, stats)
        : new StandardDecoding(decoder, sampler, graph, stops, stats);
    /** Every position's logits of one sequence, from an empty cache (one pass, as a prefill). */
    const allLogits = async (ids: number[]): Promise<Float32Array> => {
      if (decoder instanceof SlotDecoder) {
        const past = SlotBatch.single(KvCache.empty(kv, 1));
        const out = await decoder.forward([ids], [0], past, false);
        past.release();
        return out.logits;
      }
      return (await decoder.forward([ids], KvCache.empty(kv, 1), false)).logits;
    };
    const prompt = benchPrompt(a.P, m.vocabSize);
    return {
      run: async (N) => {
        Object.assign(stats, emptyStats());
        const t0 = performance.now();
        const rows = await decoding.decodeRows({
          past: KvCache.empty(kv, 1),
          feed: prompt,
          rows: Array.from({ length: a.G }, (_, i) => ({ sampleIndex: i, turn: 0, budget: N })),
          params: { ...DEFAULT_SAMPLING, stopOnToolCallEnd: false, seed: 1, maxNewTokens: N },
        });
        const totalMs = performance.now() - t0;
        if (rows.some((r) => r.tokenIds.length !== N)) throw new Error('a row stopped early');
        return { engine: slots ? 'toolrl' : 'toolrl (standard graph)', G: a.G, P: a.P, N, totalMs, ...stats };
      },
      probe: async ({ prompt, k, top, follow, ask }: ProbeRequest): Promise<ProbeResult> => {
        if (!follow || follow.length !== k)
          throw new Error('the engine probes a given continuation of k tokens');
        const ids = [...prompt, ...follow.slice(0, k - 1)];
        const logits = await allLogits(ids);
        const V = m.vocabSize;
        const rows = Array.from({ length: k }, (_, j) => {
          const at = ids.length - k + j;
          return softmaxTop(logits.subarray(at * V, (at + 1) * V), top, ask?.[j] ?? []);
        });
        return { tokens: follow, top: rows.map((r) => r.top), asked: rows.map((r) => r.asked) };
      },
      dispose: async () => {
        await decoding.dispose();
        await graph?.dispose();
      },
    };
  },
  { warmup: a.warmupTokens, measured: a.N },
);

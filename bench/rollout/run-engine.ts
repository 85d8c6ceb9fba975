// The rollout engine's measuring process (started by bench/rollout/index.ts, child.ts's protocol): G samples of a
// P-token prompt, N new tokens each, through the engine's own loop (one shared prefill, batched decode, the
// engine's sampler). EOS is ignored so every sample runs exactly N tokens, as transformers.js does with
// eos_token_id: null.
import { readBundle } from '#shared/policy/bundle';
import { decodeRows, emptyStats } from '#shared/policy/decode-loop';
import { KvCache } from '#shared/policy/kv-cache';
import { OnnxDecoder } from '#shared/policy/onnx-decoder';
import { DEFAULT_SAMPLING, Sampler } from '#shared/policy/sampler';
import { SamplerGraph } from '#shared/policy/sampler-graph';
import { childArgs, serve } from './child.ts';
import { benchPrompt } from './prompt.ts';

const a = childArgs();

await serve(
  async () => {
    const { manifest: m, modelPath } = await readBundle(a.bundle);
    const decoder = await OnnxDecoder.load(
      modelPath,
      { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim },
      m.vocabSize,
      { threads: a.threads },
    );
    const sampler = new Sampler(m.vocabSize);
    // The engine's default: the sampling graph on its own 1-thread session (`--sampler js`: the plain-JS sampler).
    const graph = a.sampler === 'js' ? undefined : await SamplerGraph.create(m.vocabSize);
    const stops = { eosIds: new Set<number>(), toolCallEndText: '</tool_call>', piece: () => '' };
    const prompt = benchPrompt(a.P, m.vocabSize);
    return {
      run: async (N) => {
        const stats = emptyStats();
        const t0 = performance.now();
        const rows = await decodeRows({
          decoder,
          sampler,
          graph,
          past: KvCache.empty(decoder.kv, 1),
          feed: prompt,
          rows: Array.from({ length: a.G }, (_, i) => ({ sampleIndex: i, turn: 0, budget: N })),
          params: { ...DEFAULT_SAMPLING, stopOnToolCallEnd: false, seed: 1, maxNewTokens: N },
          stops,
          stats,
        });
        const totalMs = performance.now() - t0;
        if (rows.some((r) => r.tokenIds.length !== N)) throw new Error('a row stopped early');
        return { engine: 'toolrl', G: a.G, P: a.P, N, totalMs, ...stats };
      },
      dispose: async () => {
        await decoder.dispose();
        await graph?.dispose();
      },
    };
  },
  { warmup: a.warmupTokens, measured: a.N },
);

// The llama.cpp reference's measuring process (started by bench/rollout/index.ts, child.ts's protocol):
// node-llama-cpp's prebuilt CPU build, from its own install in .cache/peer-llamacpp (llamacpp.ts), on a GGUF of the
// same weights as the bundle. G sequences of one context each get the P-token prompt and sample N new tokens
// (temperature 1 over the full vocabulary, as the engine samples; EOS fed back and decoding goes on, as the engine
// ignores it here); node-llama-cpp batches the G sequences' tokens into one llama_decode per step, which is how a
// CPU user would decode a group with it. It has no shared prefill: each sequence prefills its own copy.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { readBundle } from '#shared/policy/bundle';
import { childArgs, type ProbeRequest, type ProbeResult, serve } from './child.ts';
import { benchPrompt } from './prompt.ts';

/** The part of node-llama-cpp's API this process uses (its types live in its own install, not the product's). */
interface NodeLlamaCpp {
  getLlama(o: { gpu: false; build: 'never'; logLevel: string; maxThreads: number }): Promise<{
    loadModel(o: { modelPath: string }): Promise<{
      createContext(o: {
        sequences: number;
        contextSize: number;
        batchSize: number;
        threads: { ideal: number; min: number };
      }): Promise<LlamaContext>;
      readonly trainContextSize: number;
      dispose(): Promise<void>;
    }>;
    readonly cpuMathCores: number;
    dispose(): Promise<void>;
  }>;
}
interface LlamaContext {
  getSequence(): Sequence;
  dispose(): Promise<void>;
}
/** One position's output of `controlledEvaluate` (its `generateNext.probabilities`: token -> probability). */
interface ControlledOutput {
  next: { probabilities?: Map<number, number> };
}
interface Sequence {
  clearHistory(): Promise<void>;
  controlledEvaluate(
    input: (number | [number, { generateNext: { probabilities: true; options: object } }])[],
  ): Promise<(ControlledOutput | undefined)[]>;
  evaluate(
    tokens: number[],
    o: {
      temperature: number;
      topK: number;
      topP: number;
      minP: number;
      seed: number;
      yieldEogToken: boolean;
    },
  ): AsyncGenerator<number, void, void>;
}

const a = childArgs();
const { gguf, llamaCppModule } = a;
// 0 (default): temperature 1 over the full vocabulary, as the engine samples. 1 (--llama-cpp-top-k 1): greedy, so
// llama.cpp's per-sequence sampling costs next to nothing and the figure is close to its decode alone (what
// llama-batched-bench measures, which samples nothing).
const topK = a.topK ?? 0;
if (!gguf || !llamaCppModule) throw new Error('--gguf and --llama-cpp-module are required');

await serve(
  async () => {
    const lib = (await import(pathToFileURL(llamaCppModule).href)) as NodeLlamaCpp;
    // maxThreads = the measured thread count: node-llama-cpp otherwise shares out all cores between contexts.
    const llama = await lib.getLlama({
      gpu: false,
      build: 'never',
      logLevel: 'error',
      maxThreads: a.threads,
    });
    const model = await llama.loadModel({ modelPath: gguf });
    // ggml picks one of its CPU backends for this CPU at run time; the report names the one it loaded.
    const backend =
      /libggml-cpu-([\w-]+)\.so/.exec(readFileSync('/proc/self/maps', 'utf8'))?.[1] ?? 'unknown';
    const context = await model.createContext({
      sequences: a.G,
      contextSize: a.P + Math.max(a.N, a.warmupTokens) + 16,
      // One batch takes every sequence's prompt at once, as the engine's prefill takes the whole prompt.
      batchSize: a.G * a.P,
      threads: { ideal: a.threads, min: a.threads },
    });
    const sequences = Array.from({ length: a.G }, () => context.getSequence());
    const prompt = benchPrompt(a.P, (await readBundle(a.bundle)).manifest.vocabSize);
    let seed = 1;
    return {
      run: async (N) => {
        await Promise.all(sequences.map((s) => s.clearHistory()));
        const firstAt: number[] = [];
        const start = performance.now();
        const counts = await Promise.all(
          sequences.map(async (s, i) => {
            let n = 0;
            const opts = { temperature: 1, topK, topP: 1, minP: 0, seed: seed + i, yieldEogToken: true };
            for await (const _ of s.evaluate(prompt, opts)) {
              if (n === 0) firstAt.push(performance.now());
              if (++n === N) break;
            }
            return n;
          }),
        );
        const end = performance.now();
        seed += a.G;
        if (counts.some((n) => n !== N))
          throw new Error(`llama.cpp generated ${counts.join(',')} tokens, expected ${N}`);
        // Prefill = until every sequence has its first token: all G prompts are in the context by then.
        const prefillMs = Math.max(...firstAt) - start;
        return {
          engine: backend,
          G: a.G,
          P: a.P,
          N,
          totalMs: end - start,
          prefillTokens: a.G * a.P,
          prefillMs,
          decodeSteps: N - 1,
          decodeTokens: a.G * (N - 1),
          decodeMs: end - start - prefillMs,
        };
      },
      probe: async ({ prompt, k, top }: ProbeRequest): Promise<ProbeResult> => {
        // Greedy: each position's most likely token is fed next; the probabilities are llama.cpp's softmax at
        // temperature 1 over the full vocabulary (no top-k, top-p or min-p).
        const s = sequences[0]!;
        await s.clearHistory();
        const options = { temperature: 1, topK: 0, topP: 1, minP: 0 };
        const tokens: number[] = [];
        const tops: { id: number; p: number }[][] = [];
        let feed = prompt;
        for (let j = 0; j < k; j++) {
          const input = [
            ...feed.slice(0, -1),
            [feed.at(-1)!, { generateNext: { probabilities: true, options } }] as [
              number,
              { generateNext: { probabilities: true; options: object } },
            ],
          ];
          const out = await s.controlledEvaluate(input);
          const probs = out.at(-1)?.next.probabilities;
          if (!probs) throw new Error('llama.cpp returned no probabilities');
          const best = [...probs]
            .map(([id, p]) => ({ id, p }))
            .sort((a, b) => b.p - a.p || a.id - b.id)
            .slice(0, top);
          tops.push(best);
          tokens.push(best[0]!.id);
          feed = [best[0]!.id];
        }
        await s.clearHistory();
        return { tokens, top: tops };
      },
      dispose: async () => {
        await context.dispose();
        await model.dispose();
        await llama.dispose();
      },
    };
  },
  { warmup: a.warmupTokens, measured: a.N },
);

// The reference's measuring process (started by bench/rollout/index.ts, child.ts's protocol): transformers.js
// `generate()` on the same bundle, G copies of the same P-token prompt as one batch (it has no shared prefill),
// N new tokens each, sampling the full distribution (temperature 1, top_k 0) like the engine, EOS ignored.
// Prefill = until the first sampled tokens (streamer). Its decoder session gets the engine's session options
// (same intra-op threads, no spin-waiting), so the ratio compares the engines, not thread settings.
import { AutoModelForCausalLM, env, Tensor } from '@huggingface/transformers';
import { readBundle } from '#shared/policy/bundle';
import { cpuSessionOptions } from '#shared/policy/session-options';
import { childArgs, serve } from './child.ts';
import { benchPrompt } from './prompt.ts';

const a = childArgs();

await serve(
  async () => {
    const { dir, manifest } = await readBundle(a.bundle);
    env.allowRemoteModels = false;
    env.localModelPath = '/';
    const model = await AutoModelForCausalLM.from_pretrained(dir, {
      subfolder: '',
      model_file_name: 'model',
      dtype: 'fp32',
      device: 'cpu',
      session_options: cpuSessionOptions(a.threads),
    });
    const prompt = benchPrompt(a.P, manifest.vocabSize);
    const ids = new BigInt64Array(a.G * a.P);
    for (let b = 0; b < a.G; b++) for (const [j, t] of prompt.entries()) ids[b * a.P + j] = BigInt(t);
    return {
      run: async (N) => {
        const marks: number[] = [];
        const streamer = {
          put: () => marks.push(performance.now()),
          end: () => marks.push(performance.now()),
        };
        const start = performance.now();
        await model.generate({
          input_ids: new Tensor('int64', ids, [a.G, a.P]),
          attention_mask: new Tensor('int64', new BigInt64Array(a.G * a.P).fill(1n), [a.G, a.P]),
          max_new_tokens: N,
          do_sample: true,
          temperature: 1,
          top_k: 0,
          top_p: 1,
          eos_token_id: null,
          streamer: streamer as never,
        } as never);
        // marks: [prompt, token 1, token 2, ..., token N, end]
        const steps = marks.length - 2;
        if (steps !== N) throw new Error(`transformers.js generated ${steps} steps, expected ${N}`);
        const first = marks[1]!;
        const end = marks.at(-1)!;
        return {
          engine: 'transformers.js',
          G: a.G,
          P: a.P,
          N,
          totalMs: end - start,
          prefillTokens: a.G * a.P,
          prefillMs: first - start,
          decodeSteps: N - 1,
          decodeTokens: a.G * (N - 1),
          decodeMs: end - first,
        };
      },
      dispose: async () => {
        await model.dispose();
      },
    };
  },
  { warmup: a.warmupTokens, measured: a.N },
);

// The reference measurement (child process of bench/rollout/index.ts): transformers.js `generate()` on the same
// bundle, G copies of the same P-token prompt as one batch, N new tokens each, sampling the full distribution
// (temperature 1, top_k 0) like the engine, EOS ignored. Prefill = until the first sampled tokens (streamer).
import { parseArgs } from 'node:util';
import { AutoModelForCausalLM, env, Tensor } from '@huggingface/transformers';
import { readBundle } from '#shared/policy/bundle';
import { benchPrompt } from './prompt.ts';

const { values } = parseArgs({
  options: {
    bundle: { type: 'string' },
    n: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '128' },
    'new-tokens': { type: 'string', default: '256' },
    threads: { type: 'string', default: '2' },
  },
});
const G = Number(values.n);
const P = Number(values['prompt-tokens']);
const N = Number(values['new-tokens']);
const { dir, manifest } = await readBundle(values.bundle!);
env.allowRemoteModels = false;
env.localModelPath = '/';
const t0 = performance.now();
const model = await AutoModelForCausalLM.from_pretrained(dir, {
  subfolder: '',
  model_file_name: 'model',
  dtype: 'fp32',
  device: 'cpu',
  session_options: { intraOpNumThreads: Number(values.threads), interOpNumThreads: 1 },
});
const loadMs = performance.now() - t0;

async function generate(promptLength: number, newTokens: number) {
  const prompt = benchPrompt(promptLength, manifest.vocabSize);
  const ids = new BigInt64Array(G * promptLength);
  for (let b = 0; b < G; b++) for (const [j, t] of prompt.entries()) ids[b * promptLength + j] = BigInt(t);
  const marks: number[] = [];
  const streamer = { put: () => marks.push(performance.now()), end: () => marks.push(performance.now()) };
  const start = performance.now();
  await model.generate({
    input_ids: new Tensor('int64', ids, [G, promptLength]),
    attention_mask: new Tensor('int64', new BigInt64Array(G * promptLength).fill(1n), [G, promptLength]),
    max_new_tokens: newTokens,
    do_sample: true,
    temperature: 1,
    top_k: 0,
    top_p: 1,
    eos_token_id: null,
    streamer: streamer as never,
  } as never);
  // marks: [prompt, token 1, token 2, ..., token N, end]
  return { start, firstToken: marks[1]!, end: marks.at(-1)!, steps: marks.length - 2 };
}

await generate(16, 3); // warm-up
const r = await generate(P, N);
if (r.steps !== N) throw new Error(`transformers.js generated ${r.steps} steps, expected ${N}`);
const prefillMs = r.firstToken - r.start;
const decodeMs = r.end - r.firstToken;
process.stdout.write(
  `${JSON.stringify({
    engine: 'transformers.js',
    G,
    P,
    N,
    loadMs,
    totalMs: r.end - r.start,
    prefillTokens: G * P,
    prefillMs,
    decodeSteps: N - 1,
    decodeTokens: G * (N - 1),
    decodeMs,
  })}\n`,
);
await model.dispose();

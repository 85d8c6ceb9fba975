// Prefix caching (rollout.enable_prefix_caching, shared/policy/prompt-head.ts) on the real tiny ONNX bundle: a
// prompt's head (system block and tool schemas) is prefilled once per version; what a prompt samples does not
// depend on whether its head was cached; a continuation rebuilt without its cache replays the same passes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBundle } from '#shared/policy/bundle';
import { OnnxDecoder } from '#shared/policy/onnx-decoder';
import { loadPolicy, type Policy, passesOf } from '#shared/policy/policy';
import { MIN_HEAD_TOKENS } from '#shared/policy/prompt-head';
import { DEFAULT_SAMPLING, type SamplingParams, samplingParams } from '#shared/policy/sampler';
import { TokenStateSchema } from '#shared/policy/token-state';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { RolloutConfigSchema } from '#shared/schemas/config/rollout';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';
import { referenceLogprobs } from '../../helpers/reference-logprobs.ts';

const s = (over: Partial<SamplingParams> = {}): SamplingParams => ({
  ...DEFAULT_SAMPLING,
  maxNewTokens: 10,
  prefixCache: true,
  ...over,
});
const system: ChatMessage = {
  role: 'system',
  content:
    'You are a careful assistant. Use the calculator for every sum, product and difference, then give the result in a box.',
};
const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'calculator',
      description: 'Evaluate an arithmetic expression.',
      parameters: { type: 'object', properties: { expression: { type: 'string' } } },
    },
  },
];
const ask = (q: string): ChatMessage[] => [system, { role: 'user', content: q }];

let bundleDir: string;
let decoder: OnnxDecoder;
beforeAll(async () => {
  ({ bundleDir } = await tinyBundle());
  const { manifest: m, modelPath } = await readBundle(bundleDir);
  const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
  decoder = await OnnxDecoder.load(modelPath, kv, m.vocabSize, { threads: 1 });
});
afterAll(async () => {
  await decoder?.dispose();
});

describe.each(['slots', 'standard'] as const)('prefix caching on the %s graph', (graph) => {
  const load = (cacheBytes?: number) =>
    loadPolicy(bundleDir, { threads: 1, graph, ...(cacheBytes === undefined ? {} : { cacheBytes }) });
  let warm: Policy;
  let head: number;
  beforeAll(async () => {
    warm = await load();
    const ids = warm.renderPrompt(ask('What is 17 * 23?'), tools);
    const alone = warm.tokenizer.encode(
      warm.tokenizer.render([system], tools, { addGenerationPrompt: false }),
    );
    expect(ids.slice(0, alone.length)).toEqual(alone);
    head = alone.length;
    expect(head).toBeGreaterThanOrEqual(MIN_HEAD_TOKENS);
  });
  afterAll(async () => {
    await warm?.dispose();
  });

  it('prefills the shared head once, and a prompt samples the same whether its head was cached or not', async () => {
    const before = warm.metrics.prefillTokens;
    const a = await warm.startGroup(ask('What is 17 * 23?'), tools, 3, s({ seed: 5 }));
    const b = await warm.startGroup(ask('Add 408 and 96.'), tools, 3, s({ seed: 6 }));
    // The head once, then each prompt's own tokens.
    expect(warm.metrics.prefillTokens - before).toBe(
      head + (a.promptIds.length - head) + (b.promptIds.length - head),
    );
    const cold = await load();
    try {
      const b2 = await cold.startGroup(ask('Add 408 and 96.'), tools, 3, s({ seed: 6 }));
      expect(b2.samples).toEqual(b.samples); // bit for bit: log-probs included
      expect(cold.metrics.prefillTokens).toBe(b.promptIds.length);
    } finally {
      await cold.dispose();
    }
    // The split prefill computes the model's distribution: log-probs match one pass over the whole sequence.
    for (const st of b.states) {
      const ref = await referenceLogprobs(decoder, st.tokenIds, st.promptLength);
      const got = st.behaviorLogprobs.slice(st.promptLength);
      expect(got).toHaveLength(ref.length);
      expect(Math.max(...got.map((x, i) => Math.abs(x - ref[i]!)))).toBeLessThan(1e-4);
    }
  });

  it('without the option every prompt is prefilled whole', async () => {
    const off = await load();
    try {
      const a = await off.startGroup(ask('What is 17 * 23?'), tools, 2, s({ seed: 5, prefixCache: false }));
      const b = await off.startGroup(ask('Add 408 and 96.'), tools, 2, s({ seed: 6, prefixCache: false }));
      expect(off.metrics.prefillTokens).toBe(a.promptIds.length + b.promptIds.length);
    } finally {
      await off.dispose();
    }
  });

  it('exact: a continuation without its kept cache starts from the head and samples bit for bit as on its cache', async () => {
    const params = s({ seed: 9, maxNewTokens: 6 });
    const starts = await Promise.all(
      ['What is 17 * 23?', 'Add 408 and 96.'].map((q) => warm.startGroup(ask(q), tools, 1, params)),
    );
    const fresh = await load(0);
    try {
      let expected = head;
      for (const { states } of starts) {
        const hot = await warm.continueTrajectory(states[0]!, [{ role: 'tool', content: '391' }], params);
        const shipped = TokenStateSchema.parse(JSON.parse(JSON.stringify(states[0]!)));
        const cold = await fresh.continueTrajectory(shipped, [{ role: 'tool', content: '391' }], params, {
          exact: true,
        });
        expect(cold.sample).toEqual(hot.sample);
        expect(cold.state.tokenIds).toEqual(hot.state.tokenIds);
        // Every token but the head and the last sampled one was fed once (the last one is never fed).
        expected += cold.state.tokenIds.length - 1 - head;
      }
      // Both continuations started from one prefill of the head.
      expect(fresh.metrics.prefillTokens + fresh.metrics.decodeTokens).toBe(expected);
    } finally {
      await fresh.dispose();
    }
  });
});

describe('passesOf with a head', () => {
  it('splits the prompt into the head and the rest, the passes after it unchanged', () => {
    const state = TokenStateSchema.parse({
      schemaVersion: 1,
      sampleIndex: 0,
      seed: 0,
      tokenIds: [1, 2, 3, 4, 5, 6, 7, 8, 9],
      promptLength: 4,
      lossMask: [0, 0, 0, 0, 1, 1, 0, 1, 1],
      behaviorLogprobs: [0, 0, 0, 0, -1, -1, 0, -1, -1],
      policyVersions: [-1, -1, -1, -1, 0, 0, -1, 0, 0],
      messages: [],
      tools: [],
      text: '',
      turns: [
        { turn: 0, policyVersion: 0, tokenStart: 4, tokenEnd: 6, stop: 'tool_call', text: '' },
        { turn: 1, policyVersion: 0, tokenStart: 7, tokenEnd: 9, stop: 'eos', text: '' },
      ],
      prefixChecks: [],
      cacheKey: null,
    });
    expect(passesOf(state)).toEqual([[1, 2, 3, 4], [5], [6, 7], [8]]);
    expect(passesOf(state, 3)).toEqual([[1, 2, 3], [4], [5], [6, 7], [8]]);
    expect(passesOf(state, 4)).toBeUndefined(); // a head is never the whole prompt
  });
});

describe('rollout.enable_prefix_caching', () => {
  it('is off by default and reaches the sampling params of training and validation groups when on', () => {
    expect(samplingParams(RolloutConfigSchema.parse({}), 0).prefixCache).toBeUndefined();
    const on = RolloutConfigSchema.parse({ enable_prefix_caching: true });
    expect(samplingParams(on, 0, 'train').prefixCache).toBe(true);
    expect(samplingParams(on, 0, 'val').prefixCache).toBe(true);
  });
});

// The engine on the real tiny ONNX bundle (built by the learner's CLI): group sampling, the KV cache (tiling,
// rows leaving the batch, keeping it across turns) against a cache-free forward pass, and continuation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBundle } from '#shared/policy/bundle';
import { decodeRows } from '#shared/policy/decode-loop';
import { KvCache } from '#shared/policy/kv-cache';
import { OnnxDecoder } from '#shared/policy/onnx-decoder';
import { loadPolicy, type Policy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING, Sampler, type SamplingParams } from '#shared/policy/sampler';
import { stopSpecFor } from '#shared/policy/stops';
import { TokenStateSchema } from '#shared/policy/token-state';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import { PrefixBreakError } from '#shared/policy/turns';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';
import { referenceLogprobs } from '../../helpers/reference-logprobs.ts';

const s = (over: Partial<SamplingParams> = {}): SamplingParams => ({
  ...DEFAULT_SAMPLING,
  maxNewTokens: 12,
  ...over,
});
const messages: ChatMessage[] = [{ role: 'user', content: 'What is 17 * 23?' }];
const tools: ToolSchema[] = [
  {
    type: 'function',
    function: { name: 'calculator', description: 'arithmetic', parameters: { type: 'object' } },
  },
];

let bundleDir: string;
let policy: Policy;
let decoder: OnnxDecoder;
let tok: ChatTokenizer;
beforeAll(async () => {
  ({ bundleDir } = await tinyBundle());
  policy = await loadPolicy(bundleDir, { threads: 1 });
  const { manifest: m, modelPath } = await readBundle(bundleDir);
  const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
  decoder = await OnnxDecoder.load(modelPath, kv, m.vocabSize, { threads: 1 });
  tok = await ChatTokenizer.load(bundleDir);
});
afterAll(async () => {
  await policy?.dispose();
  await decoder?.dispose();
});

/** Asserts equal lengths and every |a_i - b_i| < tol. */
function expectClose(a: readonly number[], b: readonly number[], tol = 1e-4): void {
  expect(a.length).toBe(b.length);
  const worst = Math.max(0, ...a.map((x, i) => Math.abs(x - b[i]!)));
  expect(worst).toBeLessThan(tol);
}

describe('sampleGroup', () => {
  it('is reproducible from its seed, and each sample has its own stream', async () => {
    const prompt = policy.renderPrompt(messages, tools);
    const a = await policy.sampleGroup(prompt, 4, s({ seed: 11 }));
    const b = await policy.sampleGroup(prompt, 4, s({ seed: 11 }));
    const c = await policy.sampleGroup(prompt, 4, s({ seed: 12 }));
    expect(b).toEqual(a);
    expect(c.map((x) => x.tokenIds)).not.toEqual(a.map((x) => x.tokenIds));
    expect(new Set(a.map((x) => x.tokenIds.join(','))).size).toBe(4);
    for (const x of a) {
      expect(x.tokenIds.length).toBe(x.logprobs.length);
      expect(x.tokenIds.length <= 12).toBe(true);
      if (x.stop === 'length') expect(x.tokenIds).toHaveLength(12);
      expect(x.text).toBe(tok.decode(x.stop === 'eos' ? x.tokenIds.slice(0, -1) : x.tokenIds));
    }
  });

  it('samples the same through onnxruntime as in plain JS', async () => {
    const prompt = policy.renderPrompt(messages, tools);
    const js = await loadPolicy(bundleDir, { threads: 1, sampler: 'js' });
    try {
      for (const over of [{}, { topK: 20, topP: 0.9 }, { temperature: 0 }]) {
        const a = await policy.sampleGroup(prompt, 3, s({ seed: 17, ...over }));
        const b = await js.sampleGroup(prompt, 3, s({ seed: 17, ...over }));
        expect(a.map((x) => x.tokenIds)).toEqual(b.map((x) => x.tokenIds));
        a.forEach((x, i) => {
          expectClose(x.logprobs, b[i]!.logprobs, 1e-5);
        });
      }
    } finally {
      await js.dispose();
    }
  });

  it('records log-probs equal to a cache-free forward pass, at T = 1 and T = 0.7', async () => {
    const prompt = policy.renderPrompt(messages, tools);
    for (const temperature of [1, 0.7]) {
      const group = await policy.sampleGroup(prompt, 3, s({ seed: 5, temperature, maxNewTokens: 16 }));
      for (const x of group) {
        const ref = await referenceLogprobs(decoder, [...prompt, ...x.tokenIds], prompt.length, temperature);
        expectClose(x.logprobs, ref);
      }
    }
  });

  it('sample i of a group equals sampling stream i alone (batched decode changes nothing)', async () => {
    const prompt = policy.renderPrompt(messages, tools);
    const group = await policy.sampleGroup(prompt, 4, s({ seed: 3 }));
    const [alone] = await decodeRows({
      decoder,
      sampler: new Sampler(decoder.vocabSize),
      past: KvCache.empty(decoder.kv, 1),
      feed: prompt,
      rows: [{ sampleIndex: 2, turn: 0, budget: 12 }],
      params: s({ seed: 3 }),
      stops: stopSpecFor(policy.manifest.eosTokenIds, tok),
    });
    expect(alone!.tokenIds).toEqual(group[2]!.tokenIds);
    expectClose(alone!.logprobs, group[2]!.logprobs);
  });

  it('keeps log-probs right while rows leave the batch at different steps', async () => {
    const prompt = policy.renderPrompt(messages, []);
    const budgets = [3, 9, 1, 6, 9];
    const retained: [number, KvCache][] = [];
    const rows = await decodeRows({
      decoder,
      sampler: new Sampler(decoder.vocabSize),
      past: KvCache.empty(decoder.kv, 1),
      feed: prompt,
      rows: budgets.map((budget, i) => ({ sampleIndex: i, turn: 0, budget })),
      params: s({ seed: 8, stopOnToolCallEnd: false }),
      stops: { eosIds: new Set(), toolCallEndText: '</tool_call>', piece: (id) => tok.piece(id) },
      retain: (r, cache) => retained.push([r, cache]),
    });
    expect(rows.map((r) => r.tokenIds.length)).toEqual(budgets);
    expect(rows.every((r) => r.stop === 'length')).toBe(true);
    for (const r of rows) {
      const ref = await referenceLogprobs(decoder, [...prompt, ...r.tokenIds], prompt.length);
      expectClose(r.logprobs, ref);
    }
    // Each retained cache holds every token fed before the row's last sampled one.
    expect(retained.map(([r, c]) => [r, c.batch, c.length])).toEqual(
      [2, 0, 3, 1, 4].map((r) => [r, 1, prompt.length + budgets[r]! - 1]),
    );
  });

  it('rejects bad requests before running anything', async () => {
    await expect(policy.sampleGroup([1, 2], 0, s())).rejects.toThrow(/n must be an integer >= 1/);
    await expect(policy.sampleGroup([], 2, s())).rejects.toThrow(/empty prompt/);
    await expect(policy.sampleGroup([1], 1, s({ topP: 0 }))).rejects.toThrow(/topP/);
  });
});

describe('continueTrajectory', () => {
  const toolResult: ChatMessage[] = [{ role: 'tool', content: '391' }];

  it('appends the tool result as the template delta and samples the next turn, cache kept or not', async () => {
    const params = s({ seed: 21 });
    const { states, promptIds } = await policy.startGroup(messages, tools, 2, params);
    const before = policy.metrics;
    const first = states[1]!;
    expect(first.cacheKey).not.toBeNull();
    // Through a queue: the state is JSON, and a process that did not sample it has no cache.
    const shipped = TokenStateSchema.parse(JSON.parse(JSON.stringify(first)));
    const fresh = await loadPolicy(bundleDir, { threads: 1, cacheBytes: 0 });
    try {
      const hot = await policy.continueTrajectory(first, toolResult, params);
      const cold = await fresh.continueTrajectory(shipped, toolResult, params);
      expect(policy.metrics.cacheHits).toBe(before.cacheHits + 1);
      expect(fresh.metrics.cacheMisses).toBe(1);
      expect(cold.sample.tokenIds).toEqual(hot.sample.tokenIds);
      expectClose(cold.sample.logprobs, hot.sample.logprobs);

      const st = hot.state;
      const delta = tok.encode(
        tok
          .render([...first.messages, ...toolResult], tools, { addGenerationPrompt: true })
          .slice(first.text.length),
      );
      expect(st.tokenIds).toEqual([...first.tokenIds, ...delta, ...hot.sample.tokenIds]);
      expect(st.tokenIds.slice(0, promptIds.length)).toEqual(promptIds);
      expect(st.turns.map((t) => t.turn)).toEqual([0, 1]);
      expect(st.turns[1]!.tokenStart).toBe(first.tokenIds.length + delta.length);
      expect(st.prefixChecks).toEqual([{ turn: 1, ok: true }]);
      // Log-probs of both turns equal a cache-free pass over the whole trajectory.
      const ref = await referenceLogprobs(decoder, st.tokenIds, st.promptLength);
      const sampled = st.lossMask.map((m, i) => i >= st.promptLength && m === 1);
      expectClose(
        st.behaviorLogprobs.filter((_, i) => sampled[i]),
        ref.filter((_, j) => sampled[j + st.promptLength]),
      );
      const appended = st.lossMask.map((m, i) => i >= st.promptLength && m === 0);
      expect(new Set(st.behaviorLogprobs.filter((_, i) => appended[i]))).toEqual(new Set([0]));
      expect(new Set(st.policyVersions.filter((_, i) => appended[i]))).toEqual(new Set([-1]));
    } finally {
      await fresh.dispose();
    }
  });

  it('exact: without its kept cache, a continuation rebuilds it pass by pass and samples bit for bit as on it', async () => {
    const params = s({ seed: 23, maxNewTokens: 6 });
    const { states } = await policy.startGroup(messages, tools, 2, params);
    // A process that did not sample these turns (one killed since, or whose cache was evicted) holds no cache.
    const fresh = await loadPolicy(bundleDir, { threads: 1, cacheBytes: 0 });
    try {
      let hot = states[0]!;
      let cold = TokenStateSchema.parse(JSON.parse(JSON.stringify(hot)));
      for (const result of ['391', '7']) {
        const misses = fresh.metrics.cacheMisses;
        const h = await policy.continueTrajectory(hot, [{ role: 'tool', content: result }], params);
        const c = await fresh.continueTrajectory(cold, [{ role: 'tool', content: result }], params, {
          exact: true,
        });
        expect(fresh.metrics.cacheMisses).toBe(misses + 1);
        expect(c.sample.tokenIds).toEqual(h.sample.tokenIds);
        expect(c.sample.logprobs).toEqual(h.sample.logprobs); // bit for bit, not only close
        expect(c.state.tokenIds).toEqual(h.state.tokenIds);
        hot = h.state;
        cold = c.state;
      }
    } finally {
      await fresh.dispose();
    }
  });

  it('continues many trajectories as one padded batch, matching one-by-one re-prefills', async () => {
    const params = s({ seed: 31, maxNewTokens: 6 });
    const { states } = await policy.startGroup(messages, tools, 3, params);
    // Different lengths and cache situations: 0 keeps its cache, 1 went through JSON (its key points at a cache
    // this policy still holds), 2 is a turn further along and its cache was dropped.
    const two = (await policy.continueTrajectory(states[2]!, toolResult, params)).state;
    const items = [
      { state: states[0]!, messages: toolResult },
      { state: TokenStateSchema.parse(JSON.parse(JSON.stringify(states[1]!))), messages: toolResult },
      { state: { ...two, cacheKey: null }, messages: [{ role: 'tool' as const, content: '7' }] },
    ];
    const hitsBefore = policy.metrics.cacheHits;
    const batch = await policy.continueTrajectories(items, params);
    expect(policy.metrics.cacheHits - hitsBefore).toBe(2);
    const fresh = await loadPolicy(bundleDir, { threads: 1, cacheBytes: 0 });
    try {
      for (const [i, item] of items.entries()) {
        const one = await fresh.continueTrajectory(item.state, item.messages, params);
        const got = batch[i]!;
        if (!got.ok) throw got.error;
        expect(got.state.tokenIds.slice(0, -got.sample.tokenIds.length)).toEqual(
          one.state.tokenIds.slice(0, -one.sample.tokenIds.length),
        );
        expect(got.sample.tokenIds).toEqual(one.sample.tokenIds);
        expectClose(got.sample.logprobs, one.sample.logprobs);
        const ref = await referenceLogprobs(
          decoder,
          got.state.tokenIds,
          got.state.tokenIds.length - got.sample.tokenIds.length,
        );
        expectClose(got.sample.logprobs, ref);
      }
    } finally {
      await fresh.dispose();
    }
  });

  it('a prefix break fails only its own item of a batch', async () => {
    const params = s({ seed: 4, maxNewTokens: 3 });
    const { states } = await policy.startGroup(messages, tools, 2, params);
    const tampered = { ...states[0]!, text: `${states[0]!.text}!` }; // the template cannot render that "!"
    const [bad, good] = await policy.continueTrajectories(
      [
        { state: tampered, messages: toolResult },
        { state: states[1]!, messages: toolResult },
      ],
      params,
    );
    expect(bad!.ok).toBe(false);
    if (!bad!.ok) expect(bad!.error).toBeInstanceOf(PrefixBreakError);
    expect(good!.ok && good!.sample.tokenIds.length > 0).toBe(true);
  });

  it('stops at the total response budget', async () => {
    const params = s({ seed: 2, maxNewTokens: 4, maxTotalResponseTokens: 30 });
    const { states } = await policy.startGroup(messages, tools, 1, params);
    const spent = states[0]!.tokenIds.length - states[0]!.promptLength; // 4 sampled
    const r = await policy.continueTrajectory(states[0]!, toolResult, params);
    const delta = r.state.turns[1] ? r.state.turns[1].tokenStart - states[0]!.tokenIds.length : 0;
    expect(spent + delta + r.sample.tokenIds.length <= 30).toBe(true);
    const tight = await policy.continueTrajectory(states[0]!, toolResult, {
      ...params,
      maxTotalResponseTokens: 5,
    });
    expect(tight.budgetExhausted).toBe(true);
    expect(tight.sample.tokenIds).toEqual([]);
  });

  it('counts a prefix break and throws it', async () => {
    // A template that renders past assistant turns without their header newline.
    const broken = await loadPolicy(bundleDir, {
      threads: 1,
      chatTemplate:
        "{%- for m in messages %}{%- if m.role == 'assistant' %}{{ '<|im_start|>assistant' + m.content + '<|im_end|>\\n' }}" +
        "{%- else %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}" +
        "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}",
    });
    try {
      const { states } = await broken.startGroup(messages, [], 1, s({ seed: 1, maxNewTokens: 3 }));
      await expect(broken.continueTrajectory(states[0]!, toolResult, s())).rejects.toBeInstanceOf(
        PrefixBreakError,
      );
      expect(broken.metrics).toMatchObject({ prefixChecks: 1, prefixBreaks: 1 });
    } finally {
      await broken.dispose();
    }
  });
});

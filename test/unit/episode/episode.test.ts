import { describe, expect, it } from 'vitest';
import {
  appendedTokens,
  type EpisodeState,
  EpisodeStateSchema,
  episodeOutcome,
  failEpisode,
  onAssistantTurn,
  onToolResults,
  renderToolResult,
  responseBudget,
  startEpisode,
} from '#shared/episode/index';
import type { ChatMessage } from '#shared/schemas/chat';
import type { ToolResult } from '#shared/schemas/tool-result';

const prompt: ChatMessage[] = [{ role: 'user', content: 'What is 17 * 23?' }];
const call = (name: string, args: Record<string, unknown> = {}) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
const ok = (output: string): ToolResult => ({ ok: true, output, error: null, truncated: false });
const calc = (e: string) => call('calculator', { expression: e });

/** The state survives the trip through a queue message unchanged. */
const roundTrip = (s: EpisodeState) => {
  expect(EpisodeStateSchema.parse(JSON.parse(JSON.stringify(s)))).toEqual(s);
  return s;
};

describe('a calculator episode, start to finish', () => {
  it('runs the call, appends the result and ends on the answer with eos', () => {
    let s = startEpisode({ max_turns: 4, max_total_response_length: 1000 }, prompt, { promptTokens: 20 });
    expect(responseBudget(s)).toBe(1000);

    const t1 = onAssistantTurn(s, {
      text: `I'll compute it.\n${calc('17*23')}`,
      stop: 'eos',
      generatedTokens: 30,
      policyVersion: 3,
    });
    expect(t1.decision).toEqual({
      kind: 'call_tools',
      calls: [{ name: 'calculator', arguments: { expression: '17*23' } }],
      rejected: [],
    });
    s = roundTrip(t1.state);
    expect(s.phase).toBe('tools');
    expect(s.messages.at(-1)).toEqual({
      role: 'assistant',
      content: "I'll compute it.",
      tool_calls: [
        { type: 'function', function: { name: 'calculator', arguments: { expression: '17*23' } } },
      ],
    });

    const r = onToolResults(s, [{ ...ok('391'), durationMs: 4 }]);
    expect(r.toolMessages).toEqual([{ role: 'tool', name: 'calculator', content: '391' }]);
    // The first turn occupies tokens [20, 50): the prompt is 20 tokens, the turn generated 30.
    expect(r.turn).toMatchObject({
      turn: 0,
      policyVersion: 3,
      tokenStart: 20,
      tokenEnd: 50,
      stop: 'eos',
      parseErrors: [],
    });
    expect(r.turn.toolCalls).toEqual([
      { name: 'calculator', arguments: { expression: '17*23' }, result: ok('391'), durationMs: 4 },
    ]);
    s = roundTrip(r.state);

    // 30 generated + 15 appended = 45 of 1000 used: 955 left for the next turn.
    const a = appendedTokens(s, 15);
    expect(a.next).toEqual({ kind: 'generate', maxNewTokens: 955 });
    s = roundTrip(a.state);

    const t2 = onAssistantTurn(s, {
      text: '17 * 23 = \\boxed{391}',
      stop: 'eos',
      generatedTokens: 12,
      policyVersion: 4,
    });
    expect(t2.decision).toEqual({ kind: 'finish', reason: 'eos' });
    const out = episodeOutcome(roundTrip(t2.state));
    expect(out.finishReason).toBe('eos');
    // The second turn starts after prompt (20) + turn 1 (30) + tool tokens (15) = 65 and generated 12.
    expect(out.turns[1]).toMatchObject({
      turn: 1,
      tokenStart: 65,
      tokenEnd: 77,
      content: '17 * 23 = \\boxed{391}',
      toolCalls: [],
    });
    expect(out.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(t2.state.responseTokens).toBe(57);
  });
});

describe('finish reasons', () => {
  const twoTurns = (cfg: Parameters<typeof startEpisode>[0]) => {
    let s = startEpisode(cfg, prompt);
    s = onAssistantTurn(s, { text: calc('1+1'), stop: 'eos', generatedTokens: 10 }).state;
    s = onToolResults(s, [ok('2')]).state;
    return appendedTokens(s, 5);
  };

  it('max_turns: calls written on the last allowed turn are recorded but not run', () => {
    const { state } = twoTurns({ max_turns: 2 });
    const t = onAssistantTurn(state, { text: `again ${calc('2+2')}`, stop: 'eos', generatedTokens: 10 });
    expect(t.decision).toEqual({ kind: 'finish', reason: 'max_turns' });
    const last = episodeOutcome(t.state).turns[1]!;
    expect(last.toolCalls[0]?.result).toEqual({
      ok: false,
      output: '',
      error: { type: 'resource_limit', message: 'not executed: the episode ended (max_turns)' },
      truncated: false,
    });
    expect(t.state.toolCallsUsed).toBe(1);
  });

  it('max_turns = 1 makes a single-turn episode: an answer is still eos', () => {
    const s = startEpisode({ max_turns: 1 }, prompt);
    expect(onAssistantTurn(s, { text: '391', stop: 'eos', generatedTokens: 2 }).decision).toEqual({
      kind: 'finish',
      reason: 'eos',
    });
    expect(onAssistantTurn(s, { text: calc('1'), stop: 'eos', generatedTokens: 2 }).decision).toEqual({
      kind: 'finish',
      reason: 'max_turns',
    });
  });

  it('max_tool_calls: a turn that calls after the budget is spent ends the episode', () => {
    const { state } = twoTurns({ max_tool_calls: 1 });
    const t = onAssistantTurn(state, { text: calc('3+3'), stop: 'eos', generatedTokens: 10 });
    expect(t.decision).toEqual({ kind: 'finish', reason: 'max_tool_calls' });
    // The model can still answer after spending its budget.
    expect(onAssistantTurn(state, { text: 'It is 2.', stop: 'eos', generatedTokens: 4 }).decision.kind).toBe(
      'finish',
    );
  });

  it('length: a turn cut by the per-turn budget ends the episode and its calls are not run', () => {
    const s = startEpisode({ max_total_response_length: 1000 }, prompt);
    const t = onAssistantTurn(s, {
      text: `${calc('1+1')} and then <tool_call>{"name": "calc`,
      stop: 'length',
      generatedTokens: 256,
    });
    expect(t.decision).toEqual({ kind: 'finish', reason: 'length' });
    expect(t.state.turns[0]?.toolCalls).toHaveLength(1);
    expect(t.state.turns[0]?.toolCalls[0]?.result.ok).toBe(false);
    expect(t.state.turns[0]?.parseErrors[0]?.message).toMatch(/unclosed/);
  });

  it('max_total_response_length: a cut turn that used up the whole budget', () => {
    const s = startEpisode({ max_total_response_length: 100 }, prompt);
    expect(onAssistantTurn(s, { text: 'long', stop: 'length', generatedTokens: 100 }).decision).toEqual({
      kind: 'finish',
      reason: 'max_total_response_length',
    });
  });

  it('max_total_response_length: calls written with no room left for their results are not run', () => {
    const s = startEpisode({ max_total_response_length: 100 }, prompt);
    const t = onAssistantTurn(s, { text: calc('1'), stop: 'eos', generatedTokens: 100 });
    expect(t.decision).toEqual({ kind: 'finish', reason: 'max_total_response_length' });
  });

  it('max_total_response_length: appended tool tokens that reach the budget', () => {
    // 10 generated + 90 appended = 100 = the budget: nothing left to generate.
    const { state, next } = twoTurns({ max_total_response_length: 100 });
    expect(next.kind).toBe('generate');
    expect(responseBudget(state)).toBe(85);
    let s = startEpisode({ max_total_response_length: 100 }, prompt);
    s = onAssistantTurn(s, { text: calc('1'), stop: 'eos', generatedTokens: 10 }).state;
    s = onToolResults(s, [ok('1')]).state;
    const a = appendedTokens(s, 90);
    expect(a.next).toEqual({ kind: 'finish', reason: 'max_total_response_length' });
    expect(episodeOutcome(a.state).finishReason).toBe('max_total_response_length');
  });

  it('error: failEpisode records the calls still out as failed', () => {
    let s = startEpisode({}, prompt);
    s = onAssistantTurn(s, { text: calc('1'), stop: 'eos', generatedTokens: 5 }).state;
    const f = failEpisode(s, 'tool stage gave up after 3 attempts');
    const out = episodeOutcome(f);
    expect(out.finishReason).toBe('error');
    expect(out.error).toBe('tool stage gave up after 3 attempts');
    expect(out.turns[0]?.toolCalls[0]?.result.error).toEqual({
      type: 'internal_error',
      message: 'not executed: tool stage gave up after 3 attempts',
    });
    expect(() => failEpisode(f, 'again')).toThrow(/already finished \(error\)/);
  });

  it('a stop on a tool-call stop string with nothing parsed is an answer (eos)', () => {
    const s = startEpisode({}, prompt);
    expect(
      onAssistantTurn(s, { text: 'no call here', stop: 'tool_call', generatedTokens: 3 }).decision,
    ).toEqual({
      kind: 'finish',
      reason: 'eos',
    });
  });
});

describe('call caps', () => {
  it('runs at most max_parallel_calls per turn; the rest come back as errors in the model order', () => {
    const s = startEpisode({ max_parallel_calls: 2, max_tool_calls: 10 }, prompt);
    const t = onAssistantTurn(s, {
      text: calc('1') + calc('2') + calc('3'),
      stop: 'eos',
      generatedTokens: 60,
    });
    if (t.decision.kind !== 'call_tools') throw new Error('expected call_tools');
    expect(t.decision.calls.map((c) => c.arguments)).toEqual([{ expression: '1' }, { expression: '2' }]);
    expect(t.decision.rejected).toEqual([
      {
        index: 2,
        name: 'calculator',
        arguments: { expression: '3' },
        error: {
          type: 'resource_limit',
          message: 'not executed: this turn made 3 tool calls and at most max_parallel_calls=2 run per turn',
        },
      },
    ]);
    expect(t.state.toolCallsUsed).toBe(2);
    const r = onToolResults(t.state, [ok('1'), ok('2')]);
    expect(r.toolMessages.map((m) => m.content)).toEqual([
      '1',
      '2',
      'Error (resource_limit): not executed: this turn made 3 tool calls and at most max_parallel_calls=2 run per turn',
    ]);
    expect(r.turn.toolCalls.map((c) => c.result.ok)).toEqual([true, true, false]);
  });

  it('runs at most what is left of max_tool_calls, counting only executed calls', () => {
    // Budget 3: turn 1 runs 2 (1 left), turn 2 writes 2 and runs 1, turn 3 writes 1 with none left -> finish.
    let s = startEpisode({ max_parallel_calls: 4, max_tool_calls: 3, max_turns: 10 }, prompt);
    const t1 = onAssistantTurn(s, { text: calc('1') + calc('2'), stop: 'eos', generatedTokens: 10 });
    s = appendedTokens(onToolResults(t1.state, [ok('1'), ok('2')]).state, 5).state;
    const t2 = onAssistantTurn(s, { text: calc('3') + calc('4'), stop: 'eos', generatedTokens: 10 });
    if (t2.decision.kind !== 'call_tools') throw new Error('expected call_tools');
    expect(t2.decision.calls).toHaveLength(1);
    expect(t2.decision.rejected[0]?.error.message).toBe(
      "not executed: the episode's budget of max_tool_calls=3 is used up",
    );
    s = appendedTokens(onToolResults(t2.state, [ok('3')]).state, 5).state;
    expect(s.toolCallsUsed).toBe(3);
    expect(onAssistantTurn(s, { text: calc('5'), stop: 'eos', generatedTokens: 10 }).decision).toEqual({
      kind: 'finish',
      reason: 'max_tool_calls',
    });
  });

  it('max_tool_calls = 0: any call ends the episode', () => {
    const s = startEpisode({ max_tool_calls: 0 }, prompt);
    expect(onAssistantTurn(s, { text: calc('1'), stop: 'eos', generatedTokens: 5 }).decision).toEqual({
      kind: 'finish',
      reason: 'max_tool_calls',
    });
  });
});

describe('malformed calls', () => {
  it('a turn with only malformed calls gets their errors back and the episode goes on', () => {
    const s = startEpisode({}, prompt);
    const t = onAssistantTurn(s, {
      text: '<tool_call>{"arguments": {}}</tool_call>',
      stop: 'eos',
      generatedTokens: 9,
    });
    expect(t.decision).toEqual({ kind: 'call_tools', calls: [], rejected: [] });
    const r = onToolResults(t.state, []);
    expect(r.toolMessages).toEqual([
      {
        role: 'tool',
        content: 'Error (parse_error): 1 malformed tool call was not executed:\n1. tool call has no "name"',
      },
    ]);
    expect(r.turn.parseErrors).toEqual([{ message: 'tool call has no "name"' }]);
    expect(appendedTokens(r.state, 20).next.kind).toBe('generate');
  });

  it('arguments nested 6,000 deep are a parse error the model sees, and the state still serialises', () => {
    // JSON.parse accepts them; sending the episode on (JSON.stringify) threw a RangeError, retried to the DLQ.
    const deep = `${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`;
    const s = startEpisode({}, prompt);
    const t = onAssistantTurn(s, {
      text: `${calc('1')}<tool_call>{"name": "calculator", "arguments": ${deep}}</tool_call>`,
      stop: 'eos',
      generatedTokens: 9,
    });
    expect(t.decision).toEqual({
      kind: 'call_tools',
      calls: [{ name: 'calculator', arguments: { expression: '1' } }],
      rejected: [],
    });
    const r = onToolResults(t.state, [ok('1')]);
    expect(r.toolMessages[1]?.content).toBe(
      'Error (parse_error): 1 malformed tool call was not executed:\n1. "arguments" of calculator nest deeper than 64 levels',
    );
    roundTrip(r.state);
  });

  it('good calls run next to malformed ones; the parse errors come last', () => {
    const s = startEpisode({}, prompt);
    const t = onAssistantTurn(s, {
      text: `${calc('1')}<tool_call>{bad}</tool_call>`,
      stop: 'eos',
      generatedTokens: 9,
    });
    const r = onToolResults(t.state, [ok('1')]);
    expect(r.toolMessages.map((m) => m.role)).toEqual(['tool', 'tool']);
    expect(r.toolMessages[1]?.content).toMatch(
      /^Error \(parse_error\): 1 malformed tool call was not executed:\n1\. invalid JSON/,
    );
    // Only well-formed calls enter the assistant message's tool_calls.
    expect(t.state.messages.at(-1)?.tool_calls).toHaveLength(1);
  });

  it('lists at most 8 parse errors in the message and counts the rest', () => {
    const s = startEpisode({}, prompt);
    const t = onAssistantTurn(s, {
      text: '<tool_call>{}</tool_call>'.repeat(11),
      stop: 'eos',
      generatedTokens: 99,
    });
    const msg = onToolResults(t.state, []).toolMessages[0]!.content;
    expect(msg.split('\n')).toHaveLength(1 + 8 + 1);
    expect(msg).toMatch(/^Error \(parse_error\): 11 malformed tool calls were not executed:/);
    expect(msg).toMatch(/… and 3 more$/);
  });
});

describe('misuse by the caller throws with a clear message', () => {
  it('out-of-order calls, wrong result counts, bad token counts, unknown format', () => {
    const s = startEpisode({}, prompt);
    expect(() => onToolResults(s, [])).toThrow(
      'onToolResults called in phase generate; it needs phase tools',
    );
    expect(() => appendedTokens(s, 1)).toThrow(/needs phase append/);
    expect(() => episodeOutcome(s)).toThrow(/still in phase generate/);
    const t = onAssistantTurn(s, { text: calc('1'), stop: 'eos', generatedTokens: 5 });
    expect(() => onAssistantTurn(t.state, { text: 'x', stop: 'eos', generatedTokens: 1 })).toThrow(
      /needs phase generate/,
    );
    expect(() => onToolResults(t.state, [ok('1'), ok('2')])).toThrow(/expected 1 results .* got 2/);
    const r = onToolResults(t.state, [ok('1')]);
    expect(() => appendedTokens(r.state, -1)).toThrow(/-1 is not a token count/);
    expect(() => startEpisode({ tool_parser_format: 'nope' }, prompt)).toThrow(
      /unknown tool_parser_format "nope"/,
    );
  });
});

describe('tool messages read as `toolrl tools call` prints a result', () => {
  it('shows the output, or any output followed by the error type and message', () => {
    expect(renderToolResult(ok('42'))).toBe('42');
    expect(
      renderToolResult({
        ok: false,
        output: 'Traceback …',
        error: { type: 'execution_error', message: 'ZeroDivisionError' },
        truncated: false,
      }),
    ).toBe('Traceback …\nError (execution_error): ZeroDivisionError');
    expect(renderToolResult({ ok: false, output: '', error: null, truncated: false })).toMatch(
      /^Error \(internal_error\)/,
    );
  });
});

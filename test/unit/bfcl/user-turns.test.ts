// Multi-user-turn episodes (the episode logic's extension for BFCL): the next user message is fed when the model
// ends a turn, held-out functions arrive at their turn, and budgets still end the episode. Pure functions: no
// environment process.
import { describe, expect, it } from 'vitest';
import {
  appendedTokens,
  EpisodeStateSchema,
  episodeOutcome,
  onAssistantTurn,
  onToolResults,
  startEpisode,
} from '#shared/episode/index';
import {
  ADDITIONAL_FUNCTIONS_PROMPT,
  episodeRowTools,
  toolsAtTurn,
  userTurnsOf,
} from '#shared/episode/user-turns';
import type { ChatMessage } from '#shared/schemas/chat';
import { fixtureRow } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

const user = (content: string): ChatMessage[] => [{ role: 'user', content }];
const call = `<tool_call>\n${JSON.stringify({ name: 'ls', arguments: {} })}\n</tool_call>`;
const ok = { ok: true, output: '{"current_directory_content": []}', error: null, truncated: false };

describe('user turns fed when the model ends a turn', () => {
  it('feeds each user turn after an answer and ends with eos after the last', () => {
    let s = startEpisode({ max_turns: 10 }, user('first'), { userTurns: [user('second'), user('third')] });
    expect(s.userTurn).toBe(0);
    // Turn 0 calls a tool: the episode stays in user turn 0.
    let t = onAssistantTurn(s, { text: call, stop: 'eos', generatedTokens: 8 });
    expect(t.decision).toMatchObject({ kind: 'call_tools', calls: [{ name: 'ls' }] });
    s = appendedTokens(onToolResults(t.state, [ok]).state, 4).state;
    expect(s.userTurn).toBe(0);
    // Turn 1 answers: user turn 1 is fed as the "results" of a call-free decision.
    t = onAssistantTurn(s, { text: 'Nothing there.', stop: 'eos', generatedTokens: 3 });
    expect(t.decision).toEqual({ kind: 'call_tools', calls: [], rejected: [], userMessages: user('second') });
    expect(t.state.userTurn).toBe(1);
    expect(EpisodeStateSchema.parse(JSON.parse(JSON.stringify(t.state)))).toEqual(t.state);
    const fed = onToolResults(t.state, []);
    expect(fed.toolMessages).toEqual(user('second'));
    expect(fed.turn.toolCalls).toEqual([]);
    s = appendedTokens(fed.state, 6).state;
    // Turn 2 answers user turn 1: user turn 2 follows; turn 3 answers it and the episode ends.
    t = onAssistantTurn(s, { text: 'ok', stop: 'eos', generatedTokens: 1 });
    s = appendedTokens(onToolResults(t.state, []).state, 6).state;
    expect(s.userTurn).toBe(2);
    t = onAssistantTurn(s, { text: 'all done', stop: 'eos', generatedTokens: 2 });
    expect(t.decision).toEqual({ kind: 'finish', reason: 'eos' });
    const out = episodeOutcome(t.state);
    expect(out.turns).toHaveLength(4);
    expect(out.messages.map((m) => `${m.role}:${m.content}`)).toEqual([
      'user:first',
      'assistant:',
      `tool:${ok.output}`,
      'assistant:Nothing there.',
      'user:second',
      'assistant:ok',
      'user:third',
      'assistant:all done',
    ]);
  });

  it('ends with max_turns or max_total_response_length when no turn or token is left for the next user turn', () => {
    const turns = { userTurns: [user('second')] };
    const byTurns = onAssistantTurn(startEpisode({ max_turns: 1 }, user('first'), turns), {
      text: 'answer',
      stop: 'eos',
      generatedTokens: 3,
    });
    expect(byTurns.decision).toEqual({ kind: 'finish', reason: 'max_turns' });
    expect(episodeOutcome(byTurns.state).turns).toHaveLength(1);
    const byTokens = onAssistantTurn(
      startEpisode({ max_turns: 5, max_total_response_length: 3 }, user('first'), turns),
      { text: 'answer', stop: 'eos', generatedTokens: 3 },
    );
    expect(byTokens.decision).toEqual({ kind: 'finish', reason: 'max_total_response_length' });
  });

  it('leaves single-turn rows as they were (no user-turn fields, eos ends the episode)', () => {
    const s = startEpisode({}, user('only'));
    expect('userTurns' in s).toBe(false);
    expect(onAssistantTurn(s, { text: 'answer', stop: 'eos', generatedTokens: 1 }).decision).toEqual({
      kind: 'finish',
      reason: 'eos',
    });
    expect(() => startEpisode({}, user('x'), { userTurns: [[]] })).toThrow(/user turn has no messages/);
  });
});

describe('BFCL rows: user turns, held-out functions, the registry view', () => {
  it('reads the turns after the prompt from extra_info.question', async () => {
    const row = await fixtureRow('multi_turn_base_0');
    const turns = userTurnsOf(row)!;
    const question = row.extra_info.question as ChatMessage[][];
    expect(row.prompt).toEqual(question[0]);
    expect(turns).toEqual(question.slice(1));
    expect(userTurnsOf({ extra_info: { index: 0 } })).toBeUndefined();
  });

  it('withholds miss_func functions until their turn, which lists them in BFCL’s words', async () => {
    // multi_turn_miss_func_0: `sort` is held out until user turn 3, whose question is empty in BFCL's data.
    const row = await fixtureRow('multi_turn_miss_func_0');
    const names = (turn: number) => toolsAtTurn(row, turn).map((t) => t.function.name);
    expect(names(0)).not.toContain('sort');
    expect(names(2)).not.toContain('sort');
    expect(names(3)).toContain('sort');
    expect(names(3)).toHaveLength(names(0).length + 1);
    const turns = userTurnsOf(row)!;
    const reveal = turns[2]!; // user turn 3 is the third after the prompt
    expect(reveal).toHaveLength(1);
    expect(reveal[0]!.content.endsWith(`\n${ADDITIONAL_FUNCTIONS_PROMPT}`)).toBe(true);
    expect(JSON.parse(reveal[0]!.content.split('\n')[0]!)).toMatchObject({
      type: 'function',
      function: { name: 'sort', parameters: { type: 'object', required: ['file_name'] } },
    });
  });

  it('gives the registry the row, the tools callable now and the calls made so far', async () => {
    const row = await fixtureRow('multi_turn_miss_func_0');
    let s = startEpisode({ max_turns: 10 }, row.prompt, { userTurns: userTurnsOf(row) });
    expect(episodeRowTools(row)).toMatchObject({ extraInfo: row.extra_info, history: [] });
    const t = onAssistantTurn(s, { text: call, stop: 'eos', generatedTokens: 8 });
    s = appendedTokens(onToolResults(t.state, [ok]).state, 4).state;
    const view = episodeRowTools(row, s);
    expect(view.history).toEqual([{ name: 'ls', arguments: {}, result: ok, durationMs: 0 }]);
    expect(view.tools?.map((x) => x.function.name)).toEqual(toolsAtTurn(row, 0).map((x) => x.function.name));
  });

  it('names what is wrong with a malformed missed_function', () => {
    const row = { extra_info: { question: [user('a'), []], missed_function: { '1': ['sort'] } } };
    expect(() => userTurnsOf(row)).toThrow(
      /missed_function\.1\[0\] is not a function doc.*toolrl bfcl dataset/,
    );
    expect(() => userTurnsOf({ extra_info: { question: [user('a'), []] } })).toThrow(
      /question\[1\] is empty and reveals no functions/,
    );
  });
});

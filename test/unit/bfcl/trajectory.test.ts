// Which calls reached the environment and how assistant turns split into BFCL's user turns: the one rule shared by
// the environment (what it replays) and the reward (what the checker scores).
import { describe, expect, it } from 'vitest';
import { callsByUserTurn, executedCalls } from '#shared/bfcl/trajectory';
import type { ToolErrorType, ToolResult } from '#shared/schemas/tool-result';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

const ok: ToolResult = { ok: true, output: '{}', error: null, truncated: false };
const failed = (type: ToolErrorType): ToolResult => ({
  ok: false,
  output: '',
  error: { type, message: type },
  truncated: false,
});
const c = (name: string, result: ToolResult | null = ok) => ({ name, arguments: { n: name }, result });
const BFCL = new Set(['cd', 'ls', 'mv']);

describe('executedCalls', () => {
  it('keeps BFCL calls that ran (ok or raised inside BFCL), in order', () => {
    const history = [
      c('cd'),
      c('ls', failed('execution_error')), // BFCL ran it and it raised: it counts
      c('mv', failed('invalid_arguments')), // refused before running
      c('cd', failed('unknown_tool')),
      c('ls', failed('timeout')), // the model was told it did not run
      c('ls', failed('resource_limit')), // over a budget: never sent
      c('calculator'), // not a BFCL function
      c('mv', null), // hand-written input: result unknown, counted as run
    ];
    expect(executedCalls(history, BFCL).map((x) => x.name)).toEqual(['cd', 'ls', 'mv']);
  });

  it('decodes arguments the model wrote as a JSON string, as the registry did when it ran them', () => {
    const asString = { name: 'cd', arguments: '{"folder": "docs"}', result: ok };
    const broken = { name: 'cd', arguments: '{"folder": ', result: ok }; // cannot have run
    expect(executedCalls([asString, broken], BFCL)).toEqual([{ name: 'cd', arguments: { folder: 'docs' } }]);
  });
});

describe('callsByUserTurn', () => {
  const turn = (calls: ReturnType<typeof c>[], parseErrors: unknown[] = []) => ({ calls, parseErrors });

  it('splits at turns without a call attempt, one step per assistant turn that ran something', () => {
    const turns = [
      turn([c('cd'), c('ls')]), // user turn 0, step 1
      turn([c('mv', failed('invalid_arguments'))]), // an attempt: still user turn 0, but nothing ran
      turn([c('mv')]), // user turn 0, step 2
      turn([]), // answer: ends user turn 0
      turn([], [{ message: 'bad json' }]), // a malformed call is an attempt: user turn 1 goes on
      turn([]), // ends user turn 1 (nothing ran in it)
      turn([c('ls')]), // user turn 2
      turn([]), // the last answer does not open a new turn
    ];
    expect(callsByUserTurn(turns, BFCL)).toEqual([
      [
        [
          { name: 'cd', arguments: { n: 'cd' } },
          { name: 'ls', arguments: { n: 'ls' } },
        ],
        [{ name: 'mv', arguments: { n: 'mv' } }],
      ],
      [],
      [[{ name: 'ls', arguments: { n: 'ls' } }]],
    ]);
  });

  it('counts a user turn as reached while the episode is still in it', () => {
    // The episode stopped (say at max_turns) mid user turn 1: two turns reached.
    expect(callsByUserTurn([turn([]), turn([c('cd')])], BFCL)).toHaveLength(2);
    expect(callsByUserTurn([], BFCL)).toEqual([[]]);
  });
});

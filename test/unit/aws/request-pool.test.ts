// Concurrent callers' entries pooled into batch requests: a limited number in flight, the rest in the next ones.
import { describe, expect, it } from 'vitest';
import { type EntryResults, RequestPool } from '#shared/adapters/aws/request-pool';

/** A pool of batches of up to 10 whose requests the test answers by hand. */
function pool(maxInFlight: number) {
  const requests: { chunk: number[]; answer: (r: EntryResults<string>) => void; fail: (e: Error) => void }[] =
    [];
  const p = new RequestPool<number, string>(
    maxInFlight,
    (waiting) => Math.min(10, waiting.length),
    (chunk) =>
      new Promise((answer, fail) => {
        requests.push({ chunk, answer, fail });
      }),
  );
  const settle = () => new Promise((r) => setTimeout(r, 0));
  return { p, requests, settle };
}

describe('RequestPool', () => {
  it('sends the entries of one turn together, and those that come while requests are in flight in the next', async () => {
    const { p, requests, settle } = pool(1);
    const first = [p.submit([1]), p.submit([2, 3])];
    await settle();
    expect(requests.map((r) => r.chunk)).toEqual([[1, 2, 3]]);
    const later = Array.from({ length: 12 }, (_, i) => p.submit([10 + i]));
    await settle();
    expect(requests).toHaveLength(1); // one in flight at most
    requests[0]!.answer(['a', 'b', 'c']);
    expect(await Promise.all(first)).toEqual([['a'], ['b', 'c']]);
    await settle();
    expect(requests.map((r) => r.chunk.length)).toEqual([3, 10]);
    requests[1]!.answer(requests[1]!.chunk.map(String));
    await settle();
    expect(requests.map((r) => r.chunk.length)).toEqual([3, 10, 2]);
    requests[2]!.answer(requests[2]!.chunk.map(String));
    expect((await Promise.all(later)).flat()).toEqual(Array.from({ length: 12 }, (_, i) => String(10 + i)));
  });

  it('fails only the callers whose entries failed, and every caller of a request that failed', async () => {
    const { p, requests, settle } = pool(2);
    const a = p.submit([1]);
    const b = p.submit([2]);
    await settle();
    requests[0]!.answer(['ok', new Error('entry 2 refused')]);
    expect(await a).toEqual(['ok']);
    await expect(b).rejects.toThrow('entry 2 refused');
    const c = p.submit([3]);
    await settle();
    requests[1]!.fail(new Error('connection reset'));
    await expect(c).rejects.toThrow('connection reset');
  });

  it('keeps up to maxInFlight requests going at once', async () => {
    const { p, requests, settle } = pool(2);
    void p.submit([1]);
    await settle();
    void p.submit([2]);
    await settle();
    void p.submit([3]);
    await settle();
    expect(requests.map((r) => r.chunk)).toEqual([[1], [2]]);
  });
});

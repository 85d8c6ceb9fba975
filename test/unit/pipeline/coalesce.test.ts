// Callers that need an answer "as of now" share calls, and each is answered by a call that started after it asked.
import { describe, expect, it } from 'vitest';
import { BoundedSet, Coalescer } from '#shared/pipeline/coalesce';

/** A call the test finishes by hand, recording when it started. */
function calls() {
  const started: { at: number; finish: (v: number) => void; fail: (e: Error) => void }[] = [];
  let clock = 0;
  const fn = () =>
    new Promise<number>((resolve, reject) => {
      started.push({ at: clock, finish: resolve, fail: reject });
    });
  return { started, fn, tick: () => ++clock };
}

describe('Coalescer', () => {
  it('a lone caller starts a call at once', async () => {
    const c = new Coalescer<number>();
    const { started, fn } = calls();
    const p = c.run('k', fn);
    expect(started).toHaveLength(1);
    started[0]!.finish(7);
    expect(await p).toBe(7);
    expect(c.size).toBe(0);
  });

  it('callers who ask while a call runs share the next one, which starts after it', async () => {
    const c = new Coalescer<number>();
    const { started, fn, tick } = calls();
    const first = c.run('k', fn);
    tick(); // e.g. a put that the first listing may have missed
    const late = [c.run('k', fn), c.run('k', fn), c.run('k', fn)];
    expect(started).toHaveLength(1); // they wait for the running call rather than trust it
    started[0]!.finish(1);
    expect(await first).toBe(1);
    await Promise.resolve();
    await Promise.resolve();
    expect(started).toHaveLength(2);
    expect(started[1]!.at).toBe(1);
    started[1]!.finish(2);
    expect(await Promise.all(late)).toEqual([2, 2, 2]);
    expect(c.size).toBe(0);
  });

  it('a failed call fails its callers only; the next still runs', async () => {
    const c = new Coalescer<number>();
    const { started, fn } = calls();
    const first = c.run('k', fn);
    const second = c.run('k', fn);
    started[0]!.fail(new Error('boom'));
    await expect(first).rejects.toThrow('boom');
    await Promise.resolve();
    await Promise.resolve();
    started[1]!.finish(3);
    expect(await second).toBe(3);
  });

  it('keys do not share calls', () => {
    const c = new Coalescer<number>();
    const { started, fn } = calls();
    void c.run('a', fn);
    void c.run('b', fn);
    expect(started).toHaveLength(2);
  });
});

describe('BoundedSet', () => {
  it('forgets its oldest members past its capacity', () => {
    const s = new BoundedSet(2);
    s.add('a');
    s.add('b');
    s.add('a'); // refreshed: b is now the oldest
    s.add('c');
    expect([s.has('a'), s.has('b'), s.has('c')]).toEqual([true, false, true]);
  });
});

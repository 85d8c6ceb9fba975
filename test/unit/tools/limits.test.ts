import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  HttpFailure,
  pause,
  RateLimiter,
  retryWithBackoff,
  Semaphore,
  sleep,
  withTimeout,
} from '#shared/tools/limits';
import { ToolFailure } from '#shared/tools/types';

describe('limits', () => {
  it('Semaphore never runs more than its size at once', async () => {
    const sem = new Semaphore(2);
    let active = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        sem.run(async () => {
          active++;
          peak = Math.max(peak, active);
          await sleep(10);
          active--;
        }),
      ),
    );
    expect(peak).toBe(2);
  });

  it('RateLimiter: a burst, then one token per 1/rate seconds; refuses waits past the deadline', async () => {
    let now = 0;
    const rl = new RateLimiter(2, 2, () => now); // 2 calls/s, burst 2
    expect(rl.reserve()).toBe(0);
    expect(rl.reserve()).toBe(0);
    expect(rl.reserve()).toBe(500); // third call waits 0.5 s for the next token
    now = 1000; // 1 s later 2 tokens refilled, 1 owed -> balance 1
    expect(rl.reserve()).toBe(0);
    await expect(rl.acquire(now + 100)).rejects.toMatchObject({ type: 'rate_limited' }); // would wait 500 ms
  });

  it('withTimeout aborts the work and reports a timeout', async () => {
    let aborted = false;
    const p = withTimeout(30, undefined, (signal) => {
      signal.addEventListener('abort', () => {
        aborted = true;
      });
      return sleep(1000, signal).then(() => 'late');
    });
    await expect(p).rejects.toMatchObject({ type: 'timeout' });
    expect(aborted).toBe(true);
  });

  it("withTimeout follows the caller's signal", async () => {
    const outer = new AbortController();
    setTimeout(() => outer.abort(), 10);
    await expect(withTimeout(5000, outer.signal, (s) => sleep(1000, s))).rejects.toBeInstanceOf(ToolFailure);
  });

  it('sleep rejects with the reason and pause resolves when the signal aborts; neither leaves a listener', async () => {
    const reason = new Error('stop');
    await expect(sleep(60_000, AbortSignal.abort(reason))).rejects.toBe(reason);
    await pause(60_000, AbortSignal.abort(reason)); // already aborted: returns at once, not after a minute
    const c = new AbortController();
    const waiting = [sleep(60_000, c.signal), pause(60_000, c.signal)];
    c.abort(reason);
    await expect(waiting[0]).rejects.toBe(reason);
    await expect(waiting[1]).resolves.toBeUndefined();
    const kept = new AbortController();
    await Promise.all([sleep(1, kept.signal), pause(1, kept.signal)]);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });

  it('retries transient HTTP failures only, with growing delays', async () => {
    let calls = 0;
    const delays: number[] = [];
    const random = () => 1; // full jitter at its cap: delays are base * 2^attempt
    const start = Date.now();
    const v = await retryWithBackoff(
      async () => {
        delays.push(Date.now() - start);
        if (++calls < 3) throw new HttpFailure('503', true, 503);
        return 'ok';
      },
      { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 1000, random },
    );
    expect(v).toBe('ok');
    expect(calls).toBe(3);
    expect(delays[2]! - delays[0]!).toBeGreaterThanOrEqual(20 + 40 - 5); // 20 ms then 40 ms

    let permanent = 0;
    await expect(
      retryWithBackoff(
        async () => {
          permanent++;
          throw new HttpFailure('400', false, 400);
        },
        { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1 },
      ),
    ).rejects.toMatchObject({ status: 400 });
    expect(permanent).toBe(1);

    let exhausted = 0;
    await expect(
      retryWithBackoff(
        async () => {
          exhausted++;
          throw new HttpFailure('502', true, 502);
        },
        { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 1 },
      ),
    ).rejects.toMatchObject({ status: 502 });
    expect(exhausted).toBe(3); // first try + 2 retries
  });
});

// Per-tool execution limits: timeout, concurrency (the seeds' `num_workers` and `rate_limit`), a rate (calls per
// second, a token bucket) and retries with exponential backoff for transient failures only.
import { ToolFailure } from './types.ts';

/** Runs `fn` with a signal that aborts after `ms` or when `outer` aborts; a timeout becomes a `timeout` failure. */
export async function withTimeout<T>(
  ms: number,
  outer: AbortSignal | undefined,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onOuterAbort = () => controller.abort(outer?.reason ?? new Error('aborted'));
  if (outer?.aborted) throw new ToolFailure('timeout', 'the call was cancelled before it started');
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const failure = new ToolFailure('timeout', `the tool did not finish within ${formatSeconds(ms)}`);
      controller.abort(failure);
      reject(failure);
    }, ms);
    timer.unref?.();
  });
  const cancelled = new Promise<never>((_, reject) => {
    controller.signal.addEventListener(
      'abort',
      () => {
        if (outer?.aborted) reject(new ToolFailure('timeout', 'the call was cancelled'));
      },
      { once: true },
    );
  });
  try {
    return await Promise.race([fn(controller.signal), timedOut, cancelled]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

/** `1.5s`, `15s`: a time limit as tool errors state it. */
export const formatSeconds = (ms: number) => `${+(ms / 1000).toFixed(3)}s`;

/** A counting semaphore: at most `size` holders at once, FIFO. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];
  constructor(readonly size: number) {
    if (!(size >= 1)) throw new Error(`concurrency must be >= 1, got ${size}`);
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    }
  }
  get inUse(): number {
    return this.active;
  }
}

/**
 * Token bucket: `ratePerSecond` tokens refill continuously, bursts up to `burst`. `acquire` waits for a
 * token; it fails with `rate_limited` when the wait would not end before `deadline` (epoch ms).
 */
export class RateLimiter {
  private tokens: number;
  private last: number;
  constructor(
    readonly ratePerSecond: number,
    readonly burst = Math.max(1, ratePerSecond),
    private readonly now: () => number = Date.now,
  ) {
    if (!(ratePerSecond > 0)) throw new Error(`calls_per_second must be > 0, got ${ratePerSecond}`);
    this.tokens = burst;
    this.last = now();
  }
  /** Reserves a token now and returns how long (ms) the caller must wait before using it. */
  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.ratePerSecond);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.ratePerSecond) * 1000;
  }
  async acquire(deadline: number, signal?: AbortSignal): Promise<void> {
    const wait = this.reserve();
    if (wait === 0) return;
    if (this.now() + wait > deadline) {
      this.tokens += 1; // give the reservation back: this call does not run
      throw new ToolFailure(
        'rate_limited',
        `rate limit of ${this.ratePerSecond} calls/s reached; try again later`,
      );
    }
    await sleep(wait, signal);
  }
}

/** Waits `ms`; rejects with the signal's reason when it aborts (at once if it already has). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits `ms` or until `signal` aborts, whichever is first; never rejects (for poll loops that check the signal). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(ms, signal).catch(() => undefined);
}

/** Failure of one HTTP attempt; `transient` decides whether it is retried. */
export class HttpFailure extends ToolFailure {
  constructor(
    message: string,
    readonly transient: boolean,
    readonly status?: number,
    /** Server's Retry-After, in ms, when it sent one. */
    readonly retryAfterMs?: number,
  ) {
    super('http_error', message);
  }
}

export interface RetryOptions {
  maxRetries: number;
  /** First backoff; doubles each attempt with full jitter (AWS's "exponential backoff and jitter"). */
  baseDelayMs: number;
  maxDelayMs: number;
  signal?: AbortSignal;
  random?: () => number;
}

/** Retries `fn` on transient `HttpFailure`s only; any other error, or running out of retries, is rethrown. */
export async function retryWithBackoff<T>(
  fn: (attempt: number) => Promise<T>,
  opts: RetryOptions,
): Promise<T> {
  const random = opts.random ?? Math.random;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (!(err instanceof HttpFailure) || !err.transient || attempt >= opts.maxRetries) throw err;
      const cap = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
      const delay =
        err.retryAfterMs !== undefined ? Math.min(err.retryAfterMs, opts.maxDelayMs) : random() * cap;
      await sleep(delay, opts.signal);
    }
  }
}

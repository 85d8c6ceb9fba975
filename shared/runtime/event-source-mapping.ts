// Runs one function the way Lambda's SQS event source mapping does: a few pollers long-poll its queue, gather
// batches (up to batchSize or until the batching window closes) and hand each to an invocation, with at most
// maxConcurrency batches at once, and it deletes only the records that succeeded — every record when the handler reports no item
// failures, none when it throws. Works on any Queue (embedded or SQS).
import { setMaxListeners } from 'node:events';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { z } from 'zod';
import type { Log } from '#shared/ports/log';
import { silentLog } from '#shared/ports/log';
import type { Queue, ReceivedMessage } from '#shared/ports/queue';
import { pause } from '#shared/tools/limits';
import { toSqsEvent } from './sqs-event.ts';

export type SqsHandler = (event: SQSEvent) => Promise<SQSBatchResponse | undefined>;

export interface EventSourceMappingOptions {
  readonly name: string;
  readonly queue: Queue;
  readonly handler: SqsHandler;
  readonly batchSize: number;
  readonly maxBatchingWindowSec: number;
  readonly maxConcurrency: number;
  /** Concurrent long polls (default POLLERS, never more than maxConcurrency). */
  readonly pollers?: number;
  /** Long-poll wait of each receive (SQS allows up to 20). */
  readonly waitTimeSec?: number;
  /**
   * Whether `stop` cuts the long polls in flight (default) or lets them end by themselves (within waitTimeSec). Only
   * an in-process queue can be cut safely: SQS may already have handed a message to a poll the client gives up on,
   * and that message then stays hidden for its whole visibility timeout (90 minutes for a rollout).
   */
  readonly abortPollsOnStop?: boolean;
  /**
   * When set, failed records become visible again after this many seconds instead of waiting out the full
   * visibility timeout (sized for Lambda). Lambda itself does not do this; the embedded runtime uses it so a
   * retry comes after a short backoff, not after an hour.
   */
  readonly retryAfterSec?: number;
  /**
   * While a batch's handler runs, its messages' visibility is renewed every this many seconds (default: a third of
   * the queue's visibility timeout; 0 turns it off). Lambda needs no such thing: its function timeout ends an
   * invocation long before the queue's visibility (six timeouts) runs out. Here nothing ends a slow call, so a
   * rollout that waits its turn on a busy CPU past the visibility timeout would be received again and decoded twice
   * while the first call still runs, and each such receive brings the message closer to its dead-letter queue.
   */
  readonly heartbeatSec?: number;
  readonly log?: Log;
  /** Called after each invocation (progress display, tests). */
  readonly onInvoke?: (r: InvocationResult) => void;
}

export interface InvocationResult {
  readonly function: string;
  readonly records: number;
  readonly failed: number;
  readonly threw: boolean;
  readonly ms: number;
}

export interface MappingStats {
  invocations: number;
  recordsSucceeded: number;
  recordsFailed: number;
  handlerErrors: number;
}

/**
 * Long polls per mapping. Lambda's SQS event source also polls with a few pollers (five to start with) and hands
 * each batch to an invocation, up to the maximum concurrency; a long poll per concurrent invocation (256 rollouts)
 * would hold that many sockets and server-side waits for nothing, and on SQS it starved the stages' own requests.
 */
export const POLLERS = 5;

export class EventSourceMapping {
  readonly stats: MappingStats = { invocations: 0, recordsSucceeded: 0, recordsFailed: 0, handlerErrors: 0 };
  private abort = new AbortController();
  private pollers: Promise<void>[] = [];
  private readonly invocations = new Set<Promise<void>>();
  /** Invocations running now. */
  private active = 0;
  /** Invocation slots held by pollers whose receive is under way. */
  private reserved = 0;
  private waiters: (() => void)[] = [];
  private running = false;
  private readonly log: Log;
  /** The queue's visibility timeout, asked once (on SQS it is a request). */
  private visibilitySec: Promise<number> | undefined;

  constructor(private readonly opts: EventSourceMappingOptions) {
    this.log = opts.log ?? silentLog;
  }

  /** Batches being handled right now. */
  get inFlight(): number {
    return this.active;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    const pollers = Math.min(this.opts.maxConcurrency, this.opts.pollers ?? POLLERS);
    setMaxListeners(Math.max(10, 2 * pollers), this.abort.signal);
    this.pollers = Array.from({ length: pollers }, () => this.poll());
  }

  /** Stops polling and waits for the batches being handled to finish (their results are applied). */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.opts.abortPollsOnStop !== false) this.abort.abort();
    this.wake();
    await Promise.all(this.pollers);
    this.pollers = [];
    await Promise.all([...this.invocations]);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /**
   * Waits until invocation slots are free (or the mapping stops) and reserves as many as one receive can fill (ten
   * messages), in the same tick as the check, so pollers never reserve the same slot; 0 once stopped.
   */
  private async reserve(): Promise<number> {
    for (;;) {
      if (!this.running) return 0;
      const free = this.opts.maxConcurrency - this.active - this.reserved;
      if (free > 0) {
        const slots = Math.min(free, Math.max(1, Math.floor(10 / this.opts.batchSize)));
        this.reserved += slots;
        return slots;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private async poll(): Promise<void> {
    const { batchSize } = this.opts;
    while (this.running) {
      const slots = await this.reserve();
      if (slots === 0) return;
      let messages: ReceivedMessage[];
      try {
        messages = await this.collect(slots * batchSize);
      } catch (err) {
        this.reserved -= slots;
        this.wake();
        if (!this.running) return;
        this.log.warn('receive failed', { function: this.opts.name, error: String(err) });
        await pause(1000, this.abort.signal);
        continue;
      }
      this.reserved -= slots;
      // A batch received while stopping is still handled: dropping it would only delay it by a timeout.
      for (let i = 0; i < messages.length; i += batchSize) this.dispatch(messages.slice(i, i + batchSize));
      this.wake();
    }
  }

  /**
   * Up to `maxRecords` messages: what one receive brings, or, with a batching window, what arrives until the first
   * batch is full or the window closes.
   */
  private async collect(maxRecords: number): Promise<ReceivedMessage[]> {
    const { queue, batchSize } = this.opts;
    const signal = this.abort.signal;
    const wait = this.opts.waitTimeSec ?? 20;
    const batch = await queue.receive({ maxMessages: Math.min(10, maxRecords), waitTimeSec: wait, signal });
    if (batch.length === 0 || batch.length >= batchSize || this.opts.maxBatchingWindowSec <= 0) return batch;
    const deadline = Date.now() + this.opts.maxBatchingWindowSec * 1000;
    while (batch.length < batchSize && this.running) {
      const left = (deadline - Date.now()) / 1000;
      if (left <= 0) break;
      const more = await queue.receive({
        maxMessages: Math.min(10, maxRecords - batch.length),
        waitTimeSec: left,
        signal,
      });
      batch.push(...more);
    }
    return batch;
  }

  private dispatch(batch: ReceivedMessage[]): void {
    this.active++;
    const done: Promise<void> = this.invoke(batch)
      .catch((err) => this.log.error('invocation failed', { function: this.opts.name, error: String(err) }))
      .finally(() => {
        this.active--;
        this.invocations.delete(done);
        this.wake();
      });
    this.invocations.add(done);
  }

  /**
   * Renews the batch's visibility every heartbeatSec until the returned function is called. A renewal that fails
   * (the message was deleted, or SQS's 12-hour limit) is dropped: the message then times out as it would have.
   * The batch handler's own give-back of a failed record (a shorter visibility) can race a renewal that fires in
   * the moment between it and the handler's return; that record is then retried after the full timeout.
   */
  private keepHidden(batch: readonly ReceivedMessage[]): () => void {
    if (this.opts.heartbeatSec === 0) return () => {};
    const { queue } = this.opts;
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    // A failed ask (SQS unreachable) leaves this batch unrenewed and is asked again by the next one.
    this.visibilitySec ??= queue.visibilityTimeout().catch(() => {
      this.visibilitySec = undefined;
      return 0;
    });
    void this.visibilitySec.then((vt) => {
      const period = this.opts.heartbeatSec ?? vt / 3;
      if (stopped || vt <= 0 || period <= 0) return;
      timer = setInterval(() => {
        for (const m of batch) void queue.changeVisibility(m.receiptHandle, vt).catch(() => {});
      }, period * 1000);
      timer.unref();
    });
    return () => {
      stopped = true;
      if (timer) clearInterval(timer);
    };
  }

  private async invoke(batch: ReceivedMessage[]): Promise<void> {
    const { queue, handler, name } = this.opts;
    const started = Date.now();
    let failedIds: Set<string>;
    let threw = false;
    const release = this.keepHidden(batch);
    try {
      let response: SQSBatchResponse | undefined;
      try {
        response = await handler(toSqsEvent(queue, batch));
      } finally {
        release();
      }
      failedIds = failedRecords(response, batch);
      if (!validResponse(response, batch)) {
        threw = true;
        this.stats.handlerErrors++;
        this.log.error('malformed partial batch response: its whole batch will be retried', {
          function: name,
          records: batch.length,
          response: JSON.stringify(response)?.slice(0, 500),
        });
      }
    } catch (err) {
      threw = true;
      failedIds = new Set(batch.map((m) => m.messageId));
      this.stats.handlerErrors++;
      this.log.error('handler threw: its whole batch will be retried', {
        function: name,
        records: batch.length,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
    }
    const ok = batch.filter((m) => !failedIds.has(m.messageId));
    const failed = batch.filter((m) => failedIds.has(m.messageId));
    try {
      if (ok.length > 0) await queue.deleteBatch(ok.map((m) => m.receiptHandle));
      if (this.opts.retryAfterSec !== undefined)
        for (const m of failed)
          await queue.changeVisibility(m.receiptHandle, this.opts.retryAfterSec).catch(() => {});
    } catch (err) {
      this.log.warn('delete after a successful batch failed; the records will be redelivered', {
        function: name,
        error: String(err),
      });
    }
    this.stats.invocations++;
    this.stats.recordsSucceeded += ok.length;
    this.stats.recordsFailed += failed.length;
    this.opts.onInvoke?.({
      function: name,
      records: batch.length,
      failed: failed.length,
      threw,
      ms: Date.now() - started,
    });
  }
}

/** What Lambda accepts as a partial batch response: `batchItemFailures` naming message ids of the batch. */
const BatchResponseSchema = z
  .object({
    batchItemFailures: z.array(z.object({ itemIdentifier: z.string().min(1) })).nullish(),
  })
  .nullish();

function validResponse(response: unknown, batch: readonly ReceivedMessage[]): boolean {
  const parsed = BatchResponseSchema.safeParse(response);
  if (!parsed.success) return false;
  const ids = new Set(batch.map((m) => m.messageId));
  return (parsed.data?.batchItemFailures ?? []).every((f) => ids.has(f.itemIdentifier));
}

/**
 * The records to retry, as Lambda reads the response: none for an empty or absent list; the named ones; and
 * every record when the response is malformed (an empty, null or unknown `itemIdentifier`, or not the shape at
 * all), since deleting records the handler may not have handled would lose them.
 */
export function failedRecords(response: unknown, batch: readonly ReceivedMessage[]): Set<string> {
  if (!validResponse(response, batch)) return new Set(batch.map((m) => m.messageId));
  const failures = (response as SQSBatchResponse | undefined | null)?.batchItemFailures ?? [];
  return new Set(failures.map((f) => f.itemIdentifier));
}

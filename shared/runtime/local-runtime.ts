// The local runtime: one event source mapping per function over the topology's queues, with Lambda's
// batch sizes and batching windows, per-function concurrency, and partial batch responses. The queues may be
// embedded or SQS (LocalStack): the runtime only sees the Queue port.
import type { Log } from '#shared/ports/log';
import { silentLog } from '#shared/ports/log';
import type { Queue } from '#shared/ports/queue';
import { type FunctionName, QUEUES, type QueueName } from '#shared/topology';
import { EventSourceMapping, type InvocationResult, type SqsHandler } from './event-source-mapping.ts';

export interface FunctionSettings {
  readonly maxConcurrency?: number;
  readonly batchSize?: number;
  readonly maxBatchingWindowSec?: number;
}

export interface LocalRuntimeOptions {
  /** The queue each function consumes (by the topology's queue names). */
  readonly queues: Readonly<Partial<Record<QueueName, Queue>>>;
  readonly handlers: Readonly<Partial<Record<FunctionName, SqsHandler>>>;
  /** Overrides of the topology's event source mapping settings (e.g. fewer concurrent rollouts on 2 cores). */
  readonly settings?: Readonly<Partial<Record<FunctionName, FunctionSettings>>>;
  readonly waitTimeSec?: number;
  /** See EventSourceMappingOptions.abortPollsOnStop. */
  readonly abortPollsOnStop?: boolean;
  /** See EventSourceMappingOptions.retryAfterSec. */
  readonly retryAfterSec?: number;
  readonly log?: Log;
  readonly onInvoke?: (r: InvocationResult) => void;
}

export class LocalRuntime {
  readonly mappings: Partial<Record<FunctionName, EventSourceMapping>> = {};

  constructor(opts: LocalRuntimeOptions) {
    for (const spec of Object.values(QUEUES)) {
      if (spec.consumer === 'learner') continue;
      const handler = opts.handlers[spec.consumer];
      const queue = opts.queues[spec.name];
      if (!handler || !queue) continue;
      const s = opts.settings?.[spec.consumer] ?? {};
      this.mappings[spec.consumer] = new EventSourceMapping({
        name: spec.consumer,
        queue,
        handler,
        batchSize: s.batchSize ?? spec.batchSize,
        maxBatchingWindowSec: s.maxBatchingWindowSec ?? spec.maxBatchingWindowSec,
        maxConcurrency: s.maxConcurrency ?? spec.maxConcurrency,
        waitTimeSec: opts.waitTimeSec ?? 20,
        ...(opts.abortPollsOnStop !== undefined ? { abortPollsOnStop: opts.abortPollsOnStop } : {}),
        ...(opts.retryAfterSec !== undefined ? { retryAfterSec: opts.retryAfterSec } : {}),
        log: opts.log ?? silentLog,
        ...(opts.onInvoke ? { onInvoke: opts.onInvoke } : {}),
      });
    }
  }

  start(): void {
    for (const m of Object.values(this.mappings)) m.start();
  }

  /** Stops polling and lets the batches in hand finish (their results are applied). */
  async stop(): Promise<void> {
    await Promise.all(Object.values(this.mappings).map((m) => m.stop()));
  }

  /** Batches being handled right now, over all functions. */
  get inFlight(): number {
    return Object.values(this.mappings).reduce((n, m) => n + m.inFlight, 0);
  }
}

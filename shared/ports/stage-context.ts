// What every stage is given: the blob store, the queues it sends to, its own dead-letter queue and a log.
// The Lambda entry points build it from the environment (AWS adapters); the embedded runtime from its
// in-process adapters. Stage-specific needs (policy, tools, rewards, learner jobs) extend it.
import type { QueueName } from '#shared/topology';
import type { BlobStore } from './blob-store.ts';
import type { Log } from './log.ts';
import type { Queue } from './queue.ts';

/** Counts of each run's messages per queue, kept by the stages (pipeline/queue-tally.ts). */
export interface MessageTally {
  /** Runs `fn` with `runId` as the run whose messages its sends are. */
  within<T>(runId: string | undefined, fn: () => Promise<T>): Promise<T>;
  /** A record of `runId` taken off `queue` for good: handled, or moved to its dead-letter queue. */
  handled(runId: string, queue: QueueName): void;
  /** At the end of an invocation: writes the counts (now, or soon). */
  settle(): Promise<void>;
}

export interface StageContext {
  readonly blobs: BlobStore;
  /** The queues this stage may send to (FUNCTION_SENDS in the topology). */
  readonly queues: Readonly<Partial<Record<QueueName, Queue>>>;
  /** The dead-letter queue of the queue this stage consumes (permanent failures go there with a reason). */
  readonly deadLetter?: Queue;
  /**
   * The queue this stage consumes: a record that failed is given back through it, visible again after a short
   * backoff instead of the queue's whole visibility timeout (pipeline/batch-handler.ts). Absent where the runtime
   * times retries itself (the embedded runtime).
   */
  readonly source?: Queue;
  /** Counts this run's messages per queue for `toolrl status` (AWS and LocalStack; absent in embedded runs). */
  readonly tally?: MessageTally;
  readonly log: Log;
  readonly now: () => Date;
  readonly claimCheckThresholdBytes?: number;
}

// What every stage is given: the blob store, the queues it sends to, its own dead-letter queue and a log.
// The Lambda entry points build it from the environment (AWS adapters); the embedded runtime from its
// in-process adapters. Stage-specific needs (policy, tools, rewards, learner jobs) extend it.
import type { QueueName } from '#shared/topology';
import type { BlobStore } from './blob-store.ts';
import type { Log } from './log.ts';
import type { Queue } from './queue.ts';

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
  readonly log: Log;
  readonly now: () => Date;
  readonly claimCheckThresholdBytes?: number;
}

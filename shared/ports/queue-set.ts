// The topology's queues as one object: each queue and its dead-letter queue, by logical name.
import type { QueueName } from '#shared/topology';
import type { Queue } from './queue.ts';

export interface QueueSet<Q extends Queue = Queue> {
  readonly queues: Readonly<Record<QueueName, Q>>;
  readonly dlqs: Readonly<Record<QueueName, Q>>;
  close(): Promise<void>;
}

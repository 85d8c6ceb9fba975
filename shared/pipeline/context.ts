// What every stage is given: the blob store, the queues it sends to, its own dead-letter queue and a log.
// The Lambda entry points build it from the environment (AWS adapters); the embedded runtime from its
// in-process adapters. Stage-specific needs (policy, tools, rewards, learner jobs) extend it.
import type { BlobStore } from '../ports/blob-store.ts';
import type { Log } from '../ports/log.ts';
import type { Queue } from '../ports/queue.ts';
import type { QueueName } from '../topology.ts';
import { CLAIM_CHECK_THRESHOLD_BYTES } from '../topology.ts';
import { encodeMessage } from './claim-check.ts';

export interface StageContext {
  readonly blobs: BlobStore;
  /** The queues this stage may send to (FUNCTION_SENDS in the topology). */
  readonly queues: Readonly<Partial<Record<QueueName, Queue>>>;
  /** The dead-letter queue of the queue this stage consumes (permanent failures go there with a reason). */
  readonly deadLetter?: Queue;
  readonly log: Log;
  readonly now: () => Date;
  readonly claimCheckThresholdBytes?: number;
}

/** Sends payloads to a queue, each through the claim check. */
export async function sendTo(
  ctx: StageContext,
  queue: QueueName,
  runId: string,
  payloads: readonly unknown[],
): Promise<void> {
  if (payloads.length === 0) return;
  const q = ctx.queues[queue];
  if (!q) throw new Error(`this stage has no access to the ${queue} queue`);
  const threshold = ctx.claimCheckThresholdBytes ?? CLAIM_CHECK_THRESHOLD_BYTES;
  const bodies = await Promise.all(payloads.map((p) => encodeMessage(ctx.blobs, runId, p, threshold)));
  await q.sendBatch(bodies.map((body) => ({ body })));
}

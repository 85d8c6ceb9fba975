// Sending from a stage: every payload goes through the claim check to the queues the stage's context holds
// (the StageContext port, shared/ports/stage-context.ts).
import type { StageContext } from '#shared/ports/stage-context';
import type { QueueName } from '#shared/topology';
import { CLAIM_CHECK_THRESHOLD_BYTES } from '#shared/topology';
import { encodeMessage } from './claim-check.ts';

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

// Cheap checks that let a redelivered message skip work whose result already exists, and the trajectory's id.

import type { StageContext } from '#shared/ports/stage-context';
import type { TrajectoryInFlight } from '#shared/schemas/messages/trajectory-in-flight';
import { keys } from '#shared/topology';

/** How a record arrived (SQS's ApproximateReceiveCount): 1 on a first receive, more on a redelivery. */
export interface Delivery {
  readonly receiveCount: number;
}

/**
 * The sample's scored trajectory is stored (or its whole group is complete): nothing left to do for it.
 *
 * Only asked on a redelivery. Correctness never rests on it (the reward stage stores a trajectory with
 * put-if-absent, so a duplicate that gets through makes no second contribution); it only saves repeating tool
 * calls and turns. On a first receive the answer is almost always no, and asking would cost every turn of every
 * trajectory two blob-store requests; the rare duplicate send that arrives as a first receive is still caught
 * by the put-if-absent.
 */
export async function alreadyScored(
  ctx: StageContext,
  t: TrajectoryInFlight,
  delivery: Delivery = { receiveCount: 2 },
): Promise<boolean> {
  if (delivery.receiveCount <= 1) return false;
  const { runId, groupId } = t.group;
  if (await ctx.blobs.head(keys.trajectory(runId, groupId, t.sampleIndex))) return true;
  return (await ctx.blobs.head(keys.group(runId, groupId))) !== undefined;
}

/** A trajectory's id among every run's (run, group, sample): what stateful tools key its instances by. */
export const trajectoryId = (t: Pick<TrajectoryInFlight, 'group' | 'sampleIndex'>): string =>
  `${t.group.runId}/${t.group.groupId}/${t.sampleIndex}`;

// Cheap checks that let a redelivered message skip work whose result already exists.
import type { TrajectoryInFlight } from '../schemas/messages/trajectory-in-flight.ts';
import { keys } from '../topology.ts';
import type { StageContext } from './context.ts';

/** The sample's scored trajectory is stored (or its whole group is complete): nothing left to do for it. */
export async function alreadyScored(ctx: StageContext, t: TrajectoryInFlight): Promise<boolean> {
  const { runId, groupId } = t.group;
  if (await ctx.blobs.head(keys.trajectory(runId, groupId, t.sampleIndex))) return true;
  return (await ctx.blobs.head(keys.group(runId, groupId))) !== undefined;
}

// The reward queue message: a finished trajectory to score.
import { z } from 'zod';
import { TrajectoryInFlightSchema } from './trajectory-in-flight.ts';

/**
 * @example {"schemaVersion": 1, "trajectory": {"…": "TrajectoryInFlight", "episode": {"phase": "done", "finishReason": "eos"}}}
 */
export const RewardRequestSchema = z.object({
  schemaVersion: z.literal(1),
  trajectory: TrajectoryInFlightSchema.refine((t) => t.episode.phase === 'done', {
    message: 'a trajectory sent to reward must have finished (episode phase "done")',
  }),
});
export type RewardRequest = z.infer<typeof RewardRequestSchema>;

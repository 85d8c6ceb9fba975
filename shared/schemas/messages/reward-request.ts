// The reward queue message: a finished trajectory to score.
import { z } from 'zod';
import { TrajectoryInFlightSchema } from './trajectory-in-flight.ts';

/**
 * @example {"schemaVersion": 1, "trajectory": {"…": "TrajectoryInFlight", "finishReason": "eos"}}
 */
export const RewardRequestSchema = z.object({
  schemaVersion: z.literal(1),
  trajectory: TrajectoryInFlightSchema.refine((t) => t.finishReason !== null, {
    message: 'a trajectory sent to reward must have a finishReason',
  }),
});
export type RewardRequest = z.infer<typeof RewardRequestSchema>;

// The rollout queue message: start a group (sample the first turn of all G samples with one shared
// prefill) or continue one trajectory after its tool results.
import { z } from 'zod';
import { ChatMessageSchema } from '../chat.ts';
import { GroupRefSchema, TaskRowSchema } from './group-ref.ts';
import { TrajectoryInFlightSchema } from './trajectory-in-flight.ts';

/**
 * Sent by the feeder, one per group.
 * @example {"schemaVersion": 1, "kind": "start", "group": {"runId": "r-1a2b", "groupId": "e0-p17",
 *   "promptId": "p17", "epoch": 0, "stage": null, "split": "train", "dataSource": "calc", "groupSize": 8},
 *   "row": {"data_source": "calc", "prompt": [{"role": "user", "content": "What is 17*23?"}],
 *   "reward_model": {"style": "rule", "ground_truth": "391"}}, "seed": 17, "issuedAtVersion": 3}
 */
export const RolloutStartSchema = z.object({
  schemaVersion: z.literal(1),
  kind: z.literal('start'),
  group: GroupRefSchema,
  row: TaskRowSchema,
  seed: z.number().int().nonnegative(),
  /** The newest policy version when the feeder issued the group (for staleness accounting in logs). */
  issuedAtVersion: z.number().int().nonnegative(),
});
export type RolloutStart = z.infer<typeof RolloutStartSchema>;

/**
 * Sent by the tool-call stage: the trajectory with its executed turn, and the tool messages to append.
 * @example {"schemaVersion": 1, "kind": "continue", "trajectory": {"…": "TrajectoryInFlight"},
 *   "toolMessages": [{"role": "tool", "name": "calculator", "content": "391"}]}
 */
export const RolloutContinueSchema = z.object({
  schemaVersion: z.literal(1),
  kind: z.literal('continue'),
  trajectory: TrajectoryInFlightSchema,
  toolMessages: z.array(ChatMessageSchema),
});
export type RolloutContinue = z.infer<typeof RolloutContinueSchema>;

export const RolloutRequestSchema = z.discriminatedUnion('kind', [RolloutStartSchema, RolloutContinueSchema]);
export type RolloutRequest = z.infer<typeof RolloutRequestSchema>;

// One sample of a group between stages: everything needed to continue it in another process (token state,
// conversation, episode counters) and, once finished, to score it.
import { z } from 'zod';
import { ChatMessageSchema, ToolSchemaSchema } from '../chat.ts';
import { FinishReasonSchema, TurnRecordSchema } from '../trajectory.ts';
import { GroupRefSchema, TaskRowSchema } from './group-ref.ts';

/**
 * @example {"schemaVersion": 1, "group": {"runId": "r-1a2b", "groupId": "e0-p17", "promptId": "p17",
 *   "epoch": 0, "stage": null, "split": "train", "dataSource": "calc", "groupSize": 8}, "sampleIndex": 3,
 *   "seed": 912, "row": {"data_source": "calc", "prompt": [{"role": "user", "content": "17*23?"}]},
 *   "tools": [], "tokenIds": [1, 2, 3], "promptLength": 2, "lossMask": [0, 0, 1],
 *   "behaviorLogprobs": [0, 0, -0.7], "policyVersions": [-1, -1, 3], "messages": [], "turns": [],
 *   "episode": {}, "finishReason": null}
 */
export const TrajectoryInFlightSchema = z.object({
  schemaVersion: z.literal(1),
  group: GroupRefSchema,
  sampleIndex: z.number().int().nonnegative(),
  /** Base sampling seed of this sample: a redelivered turn at the same policy version samples the same tokens. */
  seed: z.number().int().nonnegative(),
  row: TaskRowSchema,
  /** The tool schemas rendered into the prompt. */
  tools: z.array(ToolSchemaSchema),
  tokenIds: z.array(z.number().int().nonnegative()),
  promptLength: z.number().int().nonnegative(),
  lossMask: z.array(z.union([z.literal(0), z.literal(1)])),
  behaviorLogprobs: z.array(z.number()),
  policyVersions: z.array(z.number().int().min(-1)),
  messages: z.array(ChatMessageSchema),
  turns: z.array(TurnRecordSchema),
  /** The episode logic's serialisable state (turn and tool-call counters, appended tokens). */
  episode: z.record(z.string(), z.unknown()),
  /** Set when the episode is over; the trajectory then goes to reward. */
  finishReason: FinishReasonSchema.nullable(),
});
export type TrajectoryInFlight = z.infer<typeof TrajectoryInFlightSchema>;

// Who a piece of rollout work belongs to: the run, the group (prompt x epoch, or a validation prompt x
// policy version) and where the prompt came from. Carried by every rollout-side message.
import { z } from 'zod';

/**
 * @example {"runId": "r-1a2b", "groupId": "e0-p17", "promptId": "p17", "epoch": 0, "stage": null,
 *   "split": "train", "dataSource": "calc", "groupSize": 8, "policyVersion": null}
 */
export const GroupRefSchema = z.object({
  runId: z.string().min(1),
  /** `e<epoch>-p<index>` (train; `s<stage>-e<epoch>-p<index>` with a curriculum) or `val-v<version>-p<index>`. */
  groupId: z.string().min(1),
  promptId: z.string().min(1),
  epoch: z.number().int().nonnegative(),
  stage: z.string().nullable(),
  split: z.enum(['train', 'val']),
  dataSource: z.string(),
  /** G: samples in the group; the group is complete when this many scored trajectories exist. */
  groupSize: z.number().int().positive(),
  /**
   * Validation groups are rolled out by exactly this policy version (so an evaluation measures one version);
   * null: the newest version the rollout stage can load (train groups).
   */
  policyVersion: z.number().int().nonnegative().nullable().default(null),
  /**
   * A train group's place in the feeder's walk (0, 1, …): batch `position / batch_prompts`. In deterministic runs the
   * learner trains batches in this order; null for validation groups and messages from before it existed.
   */
  position: z.number().int().nonnegative().nullable().optional(),
});
export type GroupRef = z.infer<typeof GroupRefSchema>;

/**
 * The dataset row the prompt came from (verl's columns: prompt, data_source, reward_model, extra_info), kept
 * whole so rewards and per-row tools see everything; the stages parse it with the dataset-row schema.
 */
export const TaskRowSchema = z.record(z.string(), z.unknown());
export type TaskRow = z.infer<typeof TaskRowSchema>;

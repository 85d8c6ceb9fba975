// `runs/<runId>/dead-letters/<groupId>/<stage>-<messageId>.json`: one record per message of a group that a stage
// dead-lettered. The learner counts the group as dropped (and goes on); the stage that records one fails the run
// once past `trainer.max_dead_letter_fraction`, naming them by stage and reason.
import { z } from 'zod';
import { GROUP_STAGES } from '#shared/topology';

/** Where a dead letter was refused: a stage whose messages are about one group, or the learner (an invalid group). */
export const DeadLetterStageSchema = z.enum([...GROUP_STAGES, 'learner']);
export type DeadLetterStage = z.infer<typeof DeadLetterStageSchema>;

/**
 * @example {"schemaVersion": 1, "runId": "r-1a2b", "groupId": "e0-p17", "split": "train", "stage": "reward",
 *   "sampleIndex": 3, "messageId": "5fea7756-…", "reason": "Error: reward blew up (after 5 attempts)",
 *   "receiveCount": 5, "deadLetteredAt": "2025-01-01T00:00:00.000Z"}
 */
export const DeadLetterRecordSchema = z.object({
  schemaVersion: z.literal(1),
  runId: z.string().min(1),
  groupId: z.string().min(1),
  split: z.enum(['train', 'val']),
  stage: DeadLetterStageSchema,
  /** The sample the message carried, or null for a message about the whole group (a rollout start). */
  sampleIndex: z.number().int().nonnegative().nullable(),
  messageId: z.string().min(1),
  /** The dead-letter reason, as the message's `toolrl-dead-letter-reason` attribute says it. */
  reason: z.string(),
  receiveCount: z.number().int().nonnegative(),
  deadLetteredAt: z.string(),
});
export type DeadLetterRecord = z.infer<typeof DeadLetterRecordSchema>;

/** A dead-letter record whose message `toolrl redrive` sent back to its queue: kept under `redriven/` as history. */
export const RedrivenRecordSchema = DeadLetterRecordSchema.extend({
  redrivenAt: z.string(),
});
export type RedrivenRecord = z.infer<typeof RedrivenRecordSchema>;

// `runs/<runId>/queue-tally/<writer>.json`: how many of one run's messages one process sent to each queue and
// handled from it (deleted after success, or moved to the dead-letter queue). SQS counts a queue's messages, not a
// run's (it cannot filter by attribute), so the stages count their own: a run's messages in a queue are the sum of
// `sent` minus the sum of `handled` over the writers (`toolrl status`). Each process writes its own file, so writers
// never contend; the learner is one writer (its scored-groups messages, deleted after the commit that covers them).
import { z } from 'zod';

export const QueueCountsSchema = z.object({
  sent: z.number().int().nonnegative(),
  handled: z.number().int().nonnegative(),
});
export type QueueCounts = z.infer<typeof QueueCountsSchema>;

/**
 * @example {"schemaVersion": 1, "runId": "r-1a2b", "writer": "worker-9f2c1a", "updatedAt": "2025-01-01T00:00:00.000Z",
 *   "queues": {"rollout": {"sent": 12, "handled": 10}, "tool-calls": {"sent": 30, "handled": 30}}}
 */
export const QueueTallySchema = z.object({
  schemaVersion: z.literal(1),
  runId: z.string().min(1),
  /** The process: unique per process start, so a restarted one never overwrites its predecessor's counts. */
  writer: z.string().regex(/^[A-Za-z0-9_-]+$/),
  updatedAt: z.string(),
  /** By topology queue name (run-events, policy-events, rollout, tool-calls, reward, scored-groups). */
  queues: z.record(z.string(), QueueCountsSchema),
});
export type QueueTally = z.infer<typeof QueueTallySchema>;

// What `toolrl status` shows of one run beyond run.json and state.json: the learner's warm start while it runs, the
// steps and groups the run will train under `trainer.max_steps`, and the run's own messages in each queue, summed
// from the stages' and the learner's queue tallies (schemas/queue-tally.ts: SQS counts a queue, not a run).
import { readJson } from '#shared/pipeline/blob-json';
import type { BlobStore } from '#shared/ports/blob-store';
import { type LearnerWarmStart, LearnerWarmStartSchema } from '#shared/schemas/learner-stdio';
import { QueueTallySchema } from '#shared/schemas/queue-tally';
import type { RunStatus } from '#shared/schemas/run-status';
import { keys, QUEUES, type QueueName } from '#shared/topology';

export interface RunProgress {
  /** The learner's SFT warm start, while it runs or once it has (null when the run has none, or it has not begun). */
  readonly warmStart: LearnerWarmStart | null;
  /** `trainer.max_steps`, when set. */
  readonly maxSteps: number | null;
  /** Learner steps the run will take: max_steps, or the planned groups over batch_prompts. */
  readonly stepsPlanned: number | null;
  /** Groups the learner will train: the planned groups, or max_steps x batch_prompts when that is fewer. */
  readonly groupsToTrain: number | null;
}

export async function readRunProgress(blobs: BlobStore, run: RunStatus): Promise<RunProgress> {
  const warm = await readJson(blobs, keys.learnerWarmStart(run.runId), LearnerWarmStartSchema).catch(
    () => undefined,
  );
  const trainer = run.config?.trainer;
  const planned = run.totals.groupsPlanned;
  const maxSteps = trainer?.max_steps ?? null;
  const batch = trainer?.batch_prompts ?? null;
  const stepsByPlan = planned !== null && batch ? Math.ceil(planned / batch) : null;
  return {
    warmStart: warm?.value ?? null,
    maxSteps,
    stepsPlanned:
      maxSteps !== null && stepsByPlan !== null ? Math.min(maxSteps, stepsByPlan) : (maxSteps ?? stepsByPlan),
    groupsToTrain:
      maxSteps !== null && batch && planned !== null ? Math.min(planned, maxSteps * batch) : planned,
  };
}

/**
 * Queues the pipeline's own sends feed, which the tallies count; the others are fed by S3 notifications, which
 * nothing counts per run.
 */
export const TALLIED_QUEUES: readonly QueueName[] = ['rollout', 'tool-calls', 'reward', 'scored-groups'];

/**
 * The run's messages in each tallied queue (sent minus taken off, summed over every process that counted them;
 * never below 0), null for the queues fed by notifications; null altogether when nothing has been counted yet.
 */
export async function readRunQueueCounts(
  blobs: BlobStore,
  runId: string,
): Promise<Record<QueueName, number | null> | null> {
  const files = await blobs.listKeys(keys.queueTallies(runId));
  if (files.length === 0) return null;
  const tallies = await Promise.all(
    files.map((k) => readJson(blobs, k, QueueTallySchema).catch(() => undefined)),
  );
  const out = Object.fromEntries(
    (Object.keys(QUEUES) as QueueName[]).map((q) => [q, TALLIED_QUEUES.includes(q) ? 0 : null]),
  ) as Record<QueueName, number | null>;
  const sums = new Map<string, { sent: number; handled: number }>();
  for (const t of tallies) {
    for (const [q, c] of Object.entries(t?.value.queues ?? {})) {
      const s = sums.get(q) ?? { sent: 0, handled: 0 };
      s.sent += c.sent;
      s.handled += c.handled;
      sums.set(q, s);
    }
  }
  for (const q of TALLIED_QUEUES) {
    const s = sums.get(q);
    if (s) out[q] = Math.max(0, s.sent - s.handled);
  }
  return out;
}

/** The learner's warm start as status prints it, e.g. `warm start 312/700 steps, loss 0.412`. */
export function formatWarmStart(w: LearnerWarmStart): string {
  const what = w.stage ? `warm start of stage ${w.stage}` : 'warm start';
  if (w.done) return `${what} done (${w.steps} steps)`;
  return `${what} ${w.step}/${w.steps} steps${w.loss === null ? '' : `, loss ${w.loss.toFixed(3)}`}`;
}

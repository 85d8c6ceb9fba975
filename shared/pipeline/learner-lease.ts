// Exactly one learner per run: the run-starter takes `runs/<runId>/learner/lease.json` with a conditional write
// (S3 If-None-Match) before it submits the learner, and records the job in it after. Of racing starters (a
// duplicate run event, two uploads' events, a redelivery while run.json still says `starting`) one submits; the
// others find the job in the lease, or retry until it is there. A lease whose holder died before recording its
// job is taken over (compare-and-swap on its etag) once it is older than any starter could still be working.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { StageContext } from '#shared/ports/stage-context';
import { FUNCTIONS, keys } from '#shared/topology';
import { readJson, toJson } from './blob-json.ts';

/**
 * @example {"schemaVersion": 1, "runId": "r-1a2b", "holder": "9f2c…", "takenAt": "2025-01-01T00:00:00.000Z",
 *   "jobId": "a1b2c3d4-…", "submittedAt": "2025-01-01T00:00:02.000Z"}
 */
export const LearnerLeaseSchema = z.object({
  schemaVersion: z.literal(1),
  runId: z.string().min(1),
  /** The starter invocation that holds it. */
  holder: z.string().min(1),
  takenAt: z.string(),
  /** The submitted learner job; null while its holder is submitting. */
  jobId: z.string().nullable(),
  submittedAt: z.string().nullable(),
});
export type LearnerLease = z.infer<typeof LearnerLeaseSchema>;

/** A holder that has not recorded its job after this long is gone (twice the run-starter's function timeout). */
export const LEASE_STALE_MS = 2 * FUNCTIONS['run-starter'].timeoutSec * 1000;

/** Another starter is submitting this run's learner right now: retry the event later (a transient failure). */
export class LeaseHeldError extends Error {
  override name = 'LeaseHeldError';
}

export type LeaseOutcome =
  | { readonly kind: 'mine'; readonly lease: LearnerLease; readonly etag: string }
  | { readonly kind: 'submitted'; readonly jobId: string };

/** Takes the run's learner lease, or says which job already holds it; throws LeaseHeldError while one is submitting. */
export async function takeLearnerLease(ctx: StageContext, runId: string): Promise<LeaseOutcome> {
  const key = keys.learnerLease(runId);
  const now = ctx.now();
  const mine: LearnerLease = {
    schemaVersion: 1,
    runId,
    holder: randomUUID(),
    takenAt: now.toISOString(),
    jobId: null,
    submittedAt: null,
  };
  const put = await ctx.blobs.putIfAbsent(key, toJson(mine), { contentType: 'application/json' });
  if (put.written) return { kind: 'mine', lease: mine, etag: put.etag };
  const current = await readJson(ctx.blobs, key, LearnerLeaseSchema);
  if (!current) throw new LeaseHeldError(`${key} vanished while it was being taken; retrying`);
  if (current.value.jobId) return { kind: 'submitted', jobId: current.value.jobId };
  const age = now.getTime() - Date.parse(current.value.takenAt);
  if (!(age >= LEASE_STALE_MS))
    throw new LeaseHeldError(
      `another run-starter has been submitting the learner of run ${runId} since ${current.value.takenAt}; ` +
        'this event is retried until the job is recorded',
    );
  const over = await ctx.blobs.putIfMatch(key, toJson(mine), current.etag, {
    contentType: 'application/json',
  });
  if (!over.written) throw new LeaseHeldError(`another run-starter took over ${key} first; retrying`);
  ctx.log.warn('took over a learner lease whose holder never recorded a job', {
    runId,
    heldSince: current.value.takenAt,
  });
  return { kind: 'mine', lease: mine, etag: over.etag };
}

/** Records the submitted job in the lease (the holder's etag: a takeover in between wins, and is logged). */
export async function recordLearnerJob(
  ctx: StageContext,
  held: Extract<LeaseOutcome, { kind: 'mine' }>,
  jobId: string,
): Promise<void> {
  const next: LearnerLease = { ...held.lease, jobId, submittedAt: ctx.now().toISOString() };
  const put = await ctx.blobs.putIfMatch(keys.learnerLease(held.lease.runId), toJson(next), held.etag, {
    contentType: 'application/json',
  });
  if (!put.written)
    ctx.log.warn('the learner lease was taken over before its job was recorded', {
      runId: held.lease.runId,
      jobId,
    });
}

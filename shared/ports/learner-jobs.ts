// The port through which run-starter starts a run's learner: a subprocess embedded, a local process on
// LocalStack (shared/operator/local-learner-jobs.ts), an AWS Batch job on AWS (shared/adapters/aws/batch-learner-jobs.ts).
import type { RunStatus } from '#shared/schemas/run-status';

/**
 * Starts the learner for a run (embedded: a subprocess; AWS: a Batch job). Called under the run's learner lease, so
 * once per run; a repeated call (a lease taken over from a starter that died mid-submit) must not start a second.
 */
export interface LearnerJobs {
  submit(run: RunStatus): Promise<{ jobId: string }>;
}

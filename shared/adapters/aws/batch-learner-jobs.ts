// Submits a run's learner as an AWS Batch job (run-starter), under the run's learner lease (pipeline/
// learner-lease.ts), which makes the submit once per run. The job-name lookup stays as a second guard: a lease taken
// over from a starter that died after its submit finds that job live and reuses it.
import { type BatchClient, ListJobsCommand, SubmitJobCommand } from '@aws-sdk/client-batch';
import type { LearnerJobs } from '#shared/ports/learner-jobs';
import type { RunStatus } from '#shared/schemas/run-status';

export const learnerJobName = (runId: string): string =>
  `toolrl-learner-${runId.replace(/[^A-Za-z0-9_-]/g, '-')}`.slice(0, 128);

export class BatchLearnerJobs implements LearnerJobs {
  constructor(
    private readonly client: BatchClient,
    private readonly jobQueue: string,
    private readonly jobDefinition: string,
    private readonly environment: Readonly<Record<string, string>> = {},
  ) {}

  async submit(run: RunStatus): Promise<{ jobId: string }> {
    const jobName = learnerJobName(run.runId);
    const existing = await this.client.send(
      new ListJobsCommand({ jobQueue: this.jobQueue, filters: [{ name: 'JOB_NAME', values: [jobName] }] }),
    );
    const live = (existing.jobSummaryList ?? []).find((j) => j.status !== 'FAILED');
    if (live?.jobId) return { jobId: live.jobId };
    const r = await this.client.send(
      new SubmitJobCommand({
        jobName,
        jobQueue: this.jobQueue,
        jobDefinition: this.jobDefinition,
        parameters: { runId: run.runId },
        containerOverrides: {
          environment: [
            { name: 'TOOLRL_RUN_ID', value: run.runId },
            ...Object.entries(this.environment).map(([name, value]) => ({ name, value })),
          ],
        },
      }),
    );
    if (!r.jobId) throw new Error(`AWS Batch accepted ${jobName} without a job id`);
    return { jobId: r.jobId };
  }
}

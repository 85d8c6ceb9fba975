// The learner job of a run as a local process (`python -m toolrl_learner sqs`), standing in for AWS Batch where
// there is none (LocalStack). It keeps Batch's retry strategy from infra/lib/constructs/learner-job.ts: a
// learner killed by a signal (a lost host, a spot reclaim) is started again and resumes from its last
// checkpoint; one that exits with an error code is not retried, since a retry would only repeat it.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import type { LearnerJobs } from '#shared/ports/learner-jobs';
import type { RunStatus } from '#shared/schemas/run-status';
import type { EnvironmentResources } from './environment.ts';

export type LearnerJobEvent =
  | { type: 'learner-started'; runId: string; pid: number; attempt: number }
  | {
      type: 'learner-exited';
      runId: string;
      pid: number;
      attempt: number;
      code: number | null;
      signal: string | null;
      retry: boolean;
    };

export interface LocalLearnerJobsOptions {
  readonly resources: EnvironmentResources;
  readonly python: string;
  /** Working directory of the process (the repository root, where `toolrl_learner` imports from). */
  readonly cwd: string;
  /** Per-run folder for the learner's scratch and its stdout/stderr logs. */
  readonly stateDir: string;
  /** Attempts in all, like the job definition's retryAttempts. */
  readonly attempts?: number;
  /** Extra arguments (e.g. a short `--visibility` for tests, `--device cpu`). */
  readonly args?: readonly string[];
  /** Environment for the process (AWS endpoint, credentials, region); the run's variables are added. */
  readonly env?: NodeJS.ProcessEnv;
  readonly onEvent?: (e: LearnerJobEvent) => void;
}

export class LocalLearnerJobs implements LearnerJobs {
  private readonly jobs = new Map<string, ChildProcess>();
  private stopping = false;

  constructor(private readonly o: LocalLearnerJobsOptions) {}

  async submit(run: RunStatus): Promise<{ jobId: string }> {
    // A redelivered run event must not start a second learner for the run (Batch: the job-name lookup).
    if (!this.jobs.has(run.runId)) this.launch(run.runId, 1);
    return { jobId: `local-${run.runId}` };
  }

  /** Terminates every learner this object started (the worker is shutting down). */
  async stop(): Promise<void> {
    this.stopping = true;
    const exits = [...this.jobs.values()].map(
      (child) =>
        new Promise<void>((resolve) =>
          child.exitCode !== null || child.signalCode !== null
            ? resolve()
            : child.once('exit', () => resolve()),
        ),
    );
    for (const child of this.jobs.values()) child.kill('SIGTERM');
    await Promise.all(exits);
  }

  private launch(runId: string, attempt: number): void {
    const dir = join(this.o.stateDir, runId);
    mkdirSync(join(dir, 'work'), { recursive: true });
    const r = this.o.resources;
    const base = this.o.env ?? process.env;
    const out = openSync(join(dir, 'learner.out.jsonl'), 'a');
    const err = openSync(join(dir, 'learner.err.log'), 'a');
    const child = spawn(
      this.o.python,
      [
        '-m',
        'toolrl_learner',
        'sqs',
        '--run-id',
        runId,
        '--workdir',
        join(dir, 'work'),
        ...(this.o.args ?? []),
      ],
      {
        cwd: this.o.cwd,
        // Files, not pipes, and its own process group: like a Batch job, it outlives the worker that started it.
        stdio: ['ignore', out, err],
        detached: true,
        env: {
          ...base,
          // boto3 reads AWS_DEFAULT_REGION (ECS sets both on Batch).
          ...(base.AWS_REGION && !base.AWS_DEFAULT_REGION ? { AWS_DEFAULT_REGION: base.AWS_REGION } : {}),
          // As in an embedded run (runtime/embedded.ts): the learner shares this machine with the stages, and
          // libgomp's spinning workers would hold the cores the rollouts (and, on a loaded machine, others) wait for.
          OMP_WAIT_POLICY: base.OMP_WAIT_POLICY ?? 'PASSIVE',
          TOOLRL_RUN_ID: runId,
          [FUNCTION_ENV.bucket]: r.bucket,
          [FUNCTION_ENV.queueUrl('scored-groups')]: r.queueUrls['scored-groups'],
          [FUNCTION_ENV.deadLetterQueueUrl('scored-groups')]: r.deadLetterQueueUrls['scored-groups'],
          [FUNCTION_ENV.environment]: r.env,
        },
      },
    );
    closeSync(out);
    closeSync(err);
    this.jobs.set(runId, child);
    const pid = child.pid ?? -1;
    this.o.onEvent?.({ type: 'learner-started', runId, pid, attempt });
    child.on('exit', (code, signal) => {
      const retry = !this.stopping && signal !== null && attempt < (this.o.attempts ?? 5);
      this.o.onEvent?.({ type: 'learner-exited', runId, pid, attempt, code, signal, retry });
      if (retry) this.launch(runId, attempt + 1);
    });
  }
}

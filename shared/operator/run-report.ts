// `toolrl status`: one run's state from the bucket (run.json by the pipeline, learner/state.json by the
// learner, the run's dead-letter records by the stages) and the environment's queue depths, read from AWS or
// LocalStack (or, for an embedded run, from its folder: runtime/embedded-report.ts).
import { type AwsClientOptions, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import { readJson } from '#shared/pipeline/blob-json';
import {
  type DeadLetterSummary,
  describeDeadLetters,
  listDeadLetters,
  summariseDeadLetters,
} from '#shared/pipeline/dead-letters';
import type { BlobStore } from '#shared/ports/blob-store';
import { LearnerStateSchema } from '#shared/schemas/learner-stdio';
import { RunStatusSchema } from '#shared/schemas/run-status';
import { consumedQueue, type FunctionName, keys, QUEUES, type QueueName } from '#shared/topology';
import type { EnvironmentResources } from './environment.ts';
import { formatWarmStart, type RunProgress, readRunProgress, readRunQueueCounts } from './run-progress.ts';

export interface QueueReport {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
  readonly deadLetters: number;
}

export interface RunReport {
  readonly runId: string;
  readonly env: string;
  readonly bucket: string;
  /**
   * run.json's status, except `interrupted`: an embedded run that run.json calls starting or running whose
   * `toolrl train` process is gone (killed, or stopped with Ctrl-C); `resumeCommand` continues it.
   */
  readonly status: 'starting' | 'running' | 'completed' | 'failed' | 'interrupted';
  readonly reason: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly completedAt: string | null;
  readonly learnerJobId: string | null;
  readonly step: number | null;
  readonly policyVersion: number | null;
  readonly rewardMean: number | null;
  readonly groupsPlanned: number | null;
  readonly groupsConsumed: number | null;
  readonly groupsDropped: number | null;
  /** The environment's queues (shared by its runs); an embedded run's own (messages in its journals). */
  readonly queues: Readonly<Record<QueueName, QueueReport>>;
  /** This run's dead-lettered messages (records not yet redriven) by stage, with their reasons. */
  readonly deadLetters: DeadLetterSummary;
  /** Dead-letter records `toolrl redrive` has sent back (kept under redriven/). */
  readonly redriven: number;
  /** An embedded run's folder (else null: the run is in `bucket`). */
  readonly runDir: string | null;
  /** The warm start, and the steps and groups planned under max_steps (run-progress.ts). */
  readonly progress: RunProgress;
  /**
   * This run's messages in each queue, from the stages' and the learner's tallies (null per queue fed by S3
   * notifications; null altogether for an embedded run, whose `queues` are its own, or before anything was counted).
   */
  readonly runQueues: Readonly<Record<QueueName, number | null>> | null;
  /** An embedded run: the `toolrl train` process that holds it (or held it last), else null. */
  readonly process: { readonly pid: number; readonly host: string; readonly since: string } | null;
  /** An interrupted embedded run: the command that resumes it. */
  readonly resumeCommand: string | null;
}

export class RunNotFoundError extends Error {
  override name = 'RunNotFoundError';
}

/** The run's config (and maybe datasets) are in the bucket, but the run-starter has not created run.json yet. */
export class RunNotStartedError extends RunNotFoundError {
  override name = 'RunNotStartedError';
  constructor(
    message: string,
    /** When config.yaml was uploaded. */
    readonly configAt: Date,
    /** The files under input/, by bare name. */
    readonly inputs: readonly string[],
  ) {
    super(message);
  }
}

export async function queueDepths(
  r: EnvironmentResources,
  client: AwsClientOptions,
): Promise<Record<QueueName, QueueReport>> {
  const sqs = sqsClient(client);
  const names = Object.keys(QUEUES) as QueueName[];
  const depths = await Promise.all(
    names.map(async (q) => {
      const [main, dead] = await Promise.all([
        new SqsQueue(sqs, r.queueUrls[q], q).depth(),
        new SqsQueue(sqs, r.deadLetterQueueUrls[q], `${q}-dlq`).depth(),
      ]);
      return { ...main, deadLetters: dead.visible + dead.inFlight + dead.delayed };
    }),
  );
  return Object.fromEntries(names.map((q, i) => [q, depths[i]!])) as Record<QueueName, QueueReport>;
}

export async function runReport(
  r: EnvironmentResources,
  runId: string,
  client: AwsClientOptions,
): Promise<RunReport> {
  const blobs = new S3BlobStore(s3Client(client), r.bucket);
  const [report, runQueues] = await Promise.all([
    reportOf(
      blobs,
      runId,
      queueDepths(r, client),
      { env: r.env, bucket: r.bucket, runDir: null },
      async () => {
        const config = await blobs.head(keys.config(runId));
        if (!config) return `no run ${runId} in s3://${r.bucket} (environment ${r.env})`;
        const prefix = keys.inputPrefix(runId);
        const inputs = (await blobs.listKeys(prefix)).map((k) => k.slice(prefix.length));
        throw new RunNotStartedError(
          `run ${runId} has its config in s3://${r.bucket} but no run.json yet: its upload has not been handled ` +
            `(uploaded under input/: ${inputs.join(', ')}; is the pipeline deployed and running?)`,
          config.lastModified,
          inputs,
        );
      },
    ),
    readRunQueueCounts(blobs, runId),
  ]);
  return { ...report, runQueues };
}

/** The report of a run in `blobs`, wherever its queues are; `notFound` says why there is no run.json. */
export async function reportOf(
  blobs: BlobStore,
  runId: string,
  queueReports: Promise<Record<QueueName, QueueReport>>,
  where: Pick<RunReport, 'env' | 'bucket' | 'runDir'>,
  notFound: () => Promise<string>,
): Promise<RunReport> {
  const [run, learner, queues, deadLetters, redriven] = await Promise.all([
    readJson(blobs, keys.runJson(runId), RunStatusSchema),
    readJson(blobs, keys.learnerState(runId), LearnerStateSchema),
    queueReports,
    listDeadLetters(blobs, runId),
    blobs.listKeys(keys.redriven(runId)),
  ]);
  if (!run) throw new RunNotFoundError(await notFound());
  const s = run.value;
  const l = learner?.value;
  const progress = await readRunProgress(blobs, s);
  return {
    runId,
    ...where,
    status: s.status,
    reason: s.reason,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    completedAt: s.completedAt,
    learnerJobId: s.learner.jobId,
    step: l?.step ?? null,
    policyVersion: l?.policyVersion ?? null,
    rewardMean: l?.rewardMean ?? null,
    groupsPlanned: s.totals.groupsPlanned,
    groupsConsumed: l?.groupsConsumed ?? null,
    groupsDropped: l?.groupsDropped ?? null,
    queues,
    deadLetters: summariseDeadLetters(deadLetters),
    redriven: redriven.length,
    progress,
    runQueues: null,
    process: null,
    resumeCommand: null,
  };
}

const fmt = (v: number | null, digits = 0) => (v === null ? '-' : digits ? v.toFixed(digits) : String(v));

/** The report as the few lines `toolrl status` prints. */
export function formatRunReport(r: RunReport): string {
  const embedded = r.runDir !== null;
  const lines = [
    `run       ${r.runId}  (${embedded ? `embedded, ${r.runDir}` : `environment ${r.env}, s3://${r.bucket}/${keys.runPrefix(r.runId)}`})`,
    `status    ${r.status}${r.reason ? `: ${r.reason}` : ''}  (created ${r.createdAt}, updated ${r.updatedAt})`,
    ...(r.resumeCommand ? [`resume    ${r.resumeCommand}`] : []),
    ...formatLearnerLines(r),
    ...(embedded ? formatEmbeddedQueues(r) : formatQueues(r)),
  ];
  const { train, val } = r.deadLetters.groups;
  const redriven = r.redriven ? ` (${r.redriven} sent back by toolrl redrive before)` : '';
  if (train + val === 0) lines.push(`dead      none for this run${redriven}`);
  else {
    const live = r.status === 'running' || r.status === 'starting' || r.status === 'interrupted';
    const where = embedded ? `--workdir ${r.runDir!.replace(/\/runs\/[^/]+\/?$/, '')}` : `--env ${r.env}`;
    lines.push(
      `dead      ${train} train and ${val} validation group${train + val === 1 ? '' : 's'} dropped${redriven}; ` +
        `dead-lettered messages by stage${live ? ` (after a fix: toolrl redrive ${r.runId} ${where})` : ''}:`,
    );
    for (const l of describeDeadLetters(r.deadLetters)) lines.push(`          ${l}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The learner's line: step, version, reward and groups trained of those planned under max_steps; while the warm start
 * runs (no step yet, or a curriculum stage's), its progress instead of the empty counters, or after them.
 */
export function formatLearnerLines(r: RunReport): string[] {
  const p = r.progress;
  const warm = p.warmStart && !p.warmStart.done ? formatWarmStart(p.warmStart) : null;
  const job = r.learnerJobId ? `  (job ${r.learnerJobId})` : '';
  if (warm && r.step === null) return [`learner   ${warm}, then ${fmt(p.stepsPlanned)} steps of RL${job}`];
  // Submitted, and neither warm-starting nor stepping yet (loading the model, or waiting for its machine).
  if (r.step === null && r.status === 'running' && !p.warmStart)
    return [`learner   starting, then ${fmt(p.stepsPlanned)} steps of RL${job}`];
  const steps = p.stepsPlanned !== null ? `/${p.stepsPlanned}` : '';
  const cap =
    p.maxSteps !== null && p.groupsToTrain !== null && p.groupsToTrain !== r.groupsPlanned
      ? ` (max_steps ${p.maxSteps}; ${fmt(r.groupsPlanned)} planned)`
      : '';
  return [
    `learner   step ${fmt(r.step)}${steps}  policy v${fmt(r.policyVersion)}  reward ${fmt(r.rewardMean, 3)}  ` +
      `groups ${fmt(r.groupsConsumed)}/${fmt(p.groupsToTrain)} trained, ${fmt(r.groupsDropped)} dropped${cap}${job}`,
    ...(warm ? [`          ${warm}`] : []),
  ];
}

/** The queue table of a run in an environment: its own messages, the environment's, and its dead letters. */
export function formatQueues(r: RunReport): string[] {
  const lines = [
    'queues    name            this run  all runs: visible  in-flight  delayed  dead-letters (this run)',
  ];
  const deadByQueue = runDeadLettersByQueue(r.deadLetters);
  for (const [name, q] of Object.entries(r.queues) as [QueueName, QueueReport][]) {
    const own = r.runQueues?.[name];
    lines.push(
      `          ${name.padEnd(14)}  ${(own === undefined || own === null ? '-' : String(own)).padStart(8)}  ` +
        `${String(q.visible).padStart(17)}  ${String(q.inFlight).padStart(9)}  ${String(q.delayed).padStart(7)}  ` +
        `${String(deadByQueue[name] ?? 0).padStart(23)}`,
    );
  }
  lines.push(
    r.runQueues
      ? "          (this run: messages its stages and learner counted sent and not yet handled; '-': fed by S3 notifications)"
      : '          (this run: nothing counted yet)',
  );
  return lines;
}

function formatEmbeddedQueues(r: RunReport): string[] {
  const lines = [
    "queues    name            messages  dead-letters   (the run's own queues, from their journals)",
  ];
  for (const [name, q] of Object.entries(r.queues))
    lines.push(
      `          ${name.padEnd(14)}  ${String(q.visible).padStart(8)}  ${String(q.deadLetters).padStart(12)}`,
    );
  return lines;
}

/** The run's dead-lettered messages by the queue they came from (a stage's records count against the queue it consumes). */
function runDeadLettersByQueue(d: DeadLetterSummary): Partial<Record<QueueName, number>> {
  const out: Partial<Record<QueueName, number>> = {};
  for (const [stage, s] of Object.entries(d.stages)) {
    const queue: QueueName = stage === 'learner' ? 'scored-groups' : consumedQueue(stage as FunctionName);
    out[queue] = (out[queue] ?? 0) + (s?.messages ?? 0);
  }
  return out;
}

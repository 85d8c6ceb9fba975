// A stage's context on AWS (Lambda, or the local runtime against LocalStack): the environment is parsed once
// at cold start through a zod schema built from the topology (which queues the function sends to), so a
// misconfigured function fails at start-up naming the missing variable.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { BatchClient } from '@aws-sdk/client-batch';
import { z } from 'zod';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { QueueTally } from '#shared/pipeline/queue-tally';
import type { Log } from '#shared/ports/log';
import type { Queue } from '#shared/ports/queue';
import type { StageContext } from '#shared/ports/stage-context';
import { consumedQueue, FUNCTION_SENDS, type FunctionName, type QueueName } from '#shared/topology';
import { BatchLearnerJobs } from './batch-learner-jobs.ts';
import { awsClientConfig, awsClientOptionsFromEnv, s3Client, sqsClient } from './clients.ts';
import { S3BlobStore } from './s3-blob-store.ts';
import { SqsQueue } from './sqs-queue.ts';

/**
 * The environment a function needs: bucket, the queues it sends to, its own queue (to give a failed record back
 * sooner than its visibility timeout) and that queue's dead-letter queue.
 */
export function functionEnvSchema(fn: FunctionName) {
  const shape: Record<string, z.ZodType> = {
    [FUNCTION_ENV.bucket]: z.string().min(1),
    [FUNCTION_ENV.queueUrl(consumedQueue(fn))]: z.url(),
    [FUNCTION_ENV.deadLetterQueueUrl(consumedQueue(fn))]: z.url(),
  };
  for (const q of FUNCTION_SENDS[fn]) shape[FUNCTION_ENV.queueUrl(q)] = z.url();
  if (fn === 'run-starter') {
    shape[FUNCTION_ENV.learnerJobQueue] = z.string().min(1);
    shape[FUNCTION_ENV.learnerJobDefinition] = z.string().min(1);
  }
  return z.object(shape);
}

export class EnvironmentError extends Error {
  override name = 'EnvironmentError';
}

/** Parses the function's environment; throws naming every missing or malformed variable. */
export function readFunctionEnv(
  fn: FunctionName,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const parsed = functionEnvSchema(fn).safeParse(env);
  if (!parsed.success)
    throw new EnvironmentError(`function ${fn} is misconfigured:\n${z.prettifyError(parsed.error)}`);
  return parsed.data as Record<string, string>;
}

function powertoolsLog(fn: FunctionName): Log {
  const logger = new Logger({ serviceName: `toolrl-${fn}` });
  return {
    debug: (m, e) => logger.debug(m, e ?? {}),
    info: (m, e) => logger.info(m, e ?? {}),
    warn: (m, e) => logger.warn(m, e ?? {}),
    error: (m, e) => logger.error(m, e ?? {}),
  };
}

export interface AwsStageContext extends StageContext {
  /** Scratch space for downloads (policy bundles, tool configs). */
  readonly scratchDir: string;
}

/** The run-starter's context: a stage context plus the AWS Batch learner jobs it submits to. */
export interface AwsRunStarterContext extends AwsStageContext {
  readonly learnerJobs: BatchLearnerJobs;
}

/**
 * The process's tally of each run's messages (pipeline/queue-tally.ts), one per bucket: every stage of a process
 * (the local worker runs all five) writes one file per run. On Lambda it writes after every invocation (a container
 * may be frozen right after one); a long-lived worker at most every 2 s, and on stop (flushQueueTallies).
 */
const tallies = new Map<string, QueueTally>();
function processTally(blobs: S3BlobStore, bucket: string, log: Log): QueueTally {
  let t = tallies.get(bucket);
  if (!t) {
    const onLambda = process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined;
    t = new QueueTally(blobs, { intervalMs: onLambda ? 0 : 2_000, log }, onLambda ? 'lambda' : 'worker');
    tallies.set(bucket, t);
  }
  return t;
}

/** Writes every count not yet written (a worker that is stopping). */
export async function flushQueueTallies(): Promise<void> {
  await Promise.all([...tallies.values()].map((t) => t.flush()));
}

/** The context of function `fn` from the environment (AWS_ENDPOINT_URL selects LocalStack). */
export function awsStageContext(
  fn: FunctionName,
  env: NodeJS.ProcessEnv = process.env,
  log?: Log,
): AwsStageContext {
  const vars = readFunctionEnv(fn, env);
  const clientOpts = awsClientOptionsFromEnv(env);
  const sqs = sqsClient(clientOpts);
  const bucket = vars[FUNCTION_ENV.bucket]!;
  const blobs = new S3BlobStore(s3Client(clientOpts), bucket);
  const stageLog = log ?? powertoolsLog(fn);
  const tally = processTally(blobs, bucket, stageLog);
  const queues: Partial<Record<QueueName, Queue>> = {};
  for (const q of FUNCTION_SENDS[fn])
    queues[q] = tally.counting(new SqsQueue(sqs, vars[FUNCTION_ENV.queueUrl(q)]!, q), q);
  const own = consumedQueue(fn);
  const ctx: AwsStageContext = {
    blobs,
    queues,
    tally,
    deadLetter: new SqsQueue(sqs, vars[FUNCTION_ENV.deadLetterQueueUrl(own)]!, `${own}-dlq`),
    source: new SqsQueue(sqs, vars[FUNCTION_ENV.queueUrl(own)]!, own),
    log: stageLog,
    now: () => new Date(),
    scratchDir: join(tmpdir(), 'toolrl'),
  };
  return ctx;
}

/** The run-starter's context from the environment, with its learner jobs on AWS Batch. */
export function awsRunStarterContext(env: NodeJS.ProcessEnv = process.env, log?: Log): AwsRunStarterContext {
  const vars = readFunctionEnv('run-starter', env);
  const clientOpts = awsClientOptionsFromEnv(env);
  const batch = new BatchClient(awsClientConfig(clientOpts));
  return {
    ...awsStageContext('run-starter', env, log),
    learnerJobs: new BatchLearnerJobs(
      batch,
      vars[FUNCTION_ENV.learnerJobQueue]!,
      vars[FUNCTION_ENV.learnerJobDefinition]!,
    ),
  };
}

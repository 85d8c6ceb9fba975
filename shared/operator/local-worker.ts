// A worker that runs the five stages against an environment's real SQS queues and S3 bucket (LocalStack), the
// way Lambda's SQS event source mappings would: the Lambda entries of functions/<stage>/index.ts, polled by the
// local runtime, with the learner started as a local process where AWS would submit a Batch job.
//   node --import tsx shared/operator/local-worker.ts --env NAME [--learner-arg=--device --learner-arg=cpu ...]  (--help)
// It prints one JSON line per event on stdout (`{"worker": "ready"}`, invocations, learner starts and exits,
// mixed with the handlers' own JSON logs) and stops cleanly on SIGTERM or SIGINT.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { type AwsClientOptions, sqsClient } from '#shared/adapters/aws/clients';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import { awsStageContext, flushQueueTallies } from '#shared/adapters/aws/stage-context';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { createStageHandler } from '#shared/pipeline/stages/handlers';
import type { Queue } from '#shared/ports/queue';
import {
  EMBEDDED_SETTINGS,
  embeddedKvCacheBytes,
  embeddedOrtThreads,
  learnerPython,
} from '#shared/runtime/embedded';
import type { SqsHandler } from '#shared/runtime/event-source-mapping';
import { type FunctionSettings, LocalRuntime } from '#shared/runtime/local-runtime';
import { FUNCTION_NAMES, type FunctionName, QUEUES, type QueueName } from '#shared/topology';
import {
  awsSetupError,
  clientOptions,
  EnvironmentNotFoundError,
  type EnvironmentResources,
  resolveEnvironment,
} from './environment.ts';
import { LocalLearnerJobs } from './local-learner-jobs.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface LocalWorkerOptions {
  readonly resources: EnvironmentResources;
  readonly client: AwsClientOptions;
  /** Where learner processes keep their scratch and logs. */
  readonly stateDir: string;
  readonly learnerArgs?: readonly string[];
  readonly settings?: Partial<Record<FunctionName, FunctionSettings>>;
  readonly emit: (event: Record<string, unknown>) => void;
}

/**
 * The stages' concurrency in the worker: an embedded run's (256 rollouts at once, so they share the policy's decode
 * steps), but more tool-call and reward batches at once. In-process those stages spend their time computing, and
 * more of them would only contend for the cores; here each record also waits on S3 and SQS requests (hundreds of
 * milliseconds each on a busy machine), and more batches in flight hide that wait. The tools' own pools still bound
 * their CPU (the calculator's `num_workers`).
 */
export const LOCAL_WORKER_SETTINGS: Partial<Record<FunctionName, FunctionSettings>> = {
  ...EMBEDDED_SETTINGS,
  'tool-call': { ...EMBEDDED_SETTINGS['tool-call'], maxConcurrency: 16 },
  reward: { ...EMBEDDED_SETTINGS.reward, maxConcurrency: 8 },
};

/** The variables a deployed function gets from the CDK bind helpers, for every stage at once. */
export function functionEnvironment(r: EnvironmentResources): Record<string, string> {
  const env: Record<string, string> = {
    [FUNCTION_ENV.bucket]: r.bucket,
    [FUNCTION_ENV.environment]: r.env,
    // run-starter's schema asks for the Batch job; locally the learner is a process (LocalLearnerJobs).
    [FUNCTION_ENV.learnerJobQueue]: 'local',
    [FUNCTION_ENV.learnerJobDefinition]: 'local',
  };
  for (const q of Object.keys(QUEUES) as QueueName[]) {
    env[FUNCTION_ENV.queueUrl(q)] = r.queueUrls[q];
    env[FUNCTION_ENV.deadLetterQueueUrl(q)] = r.deadLetterQueueUrls[q];
  }
  return env;
}

export async function startLocalWorker(o: LocalWorkerOptions): Promise<{ stop(): Promise<void> }> {
  Object.assign(process.env, functionEnvironment(o.resources));
  // The learner shares this machine, as in an embedded run: the rollout decoder gets the embedded run's threads.
  process.env[FUNCTION_ENV.ortThreads] ??= String(embeddedOrtThreads());
  process.env[FUNCTION_ENV.kvCacheMb] ??= String(Math.floor(embeddedKvCacheBytes() / 2 ** 20));
  const learnerJobs = new LocalLearnerJobs({
    resources: o.resources,
    python: learnerPython(),
    cwd: REPO_ROOT,
    stateDir: o.stateDir,
    args: o.learnerArgs ?? [],
    onEvent: (e) => o.emit({ worker: e.type, ...e }),
  });
  const handlers: Partial<Record<FunctionName, SqsHandler>> = {
    'run-starter': createStageHandler('run-starter', { ...awsStageContext('run-starter'), learnerJobs }),
  };
  // The other stages are their Lambda entries, unchanged.
  for (const fn of FUNCTION_NAMES.filter((f) => f !== 'run-starter'))
    handlers[fn] = ((await import(`../../functions/${fn}/index.ts`)) as { handler: SqsHandler }).handler;

  const sqs = sqsClient(o.client);
  const queues: Partial<Record<QueueName, Queue>> = {};
  for (const spec of Object.values(QUEUES)) {
    if (spec.consumer === 'learner') continue;
    const url = o.resources.queueUrls[spec.name];
    // The ARN from SQS itself: event records name it as their source (LocalStack's path-style URLs do not
    // carry the account where an ARN parser looks for it).
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    queues[spec.name] = new SqsQueue(sqs, url, spec.name, Attributes?.QueueArn);
  }
  const runtime = new LocalRuntime({
    queues,
    handlers,
    settings: { ...LOCAL_WORKER_SETTINGS, ...o.settings },
    // Long polls of 5 s: an idle queue costs a request per poller every 5 s, and a stop waits at most that long for
    // the polls in flight to end by themselves (a poll cut short may have been handed a message, which SQS would
    // then hide for its whole visibility timeout).
    waitTimeSec: 5,
    abortPollsOnStop: false,
    onInvoke: (r) => o.emit({ worker: 'invoke', ...r }),
  });
  runtime.start();
  o.emit({ worker: 'ready', pid: process.pid, functions: FUNCTION_NAMES });
  return {
    async stop() {
      await runtime.stop();
      await flushQueueTallies();
      await learnerJobs.stop();
    },
  };
}

const USAGE = `usage: node --import tsx shared/operator/local-worker.ts --env NAME [--state-dir DIR] [--learner-arg=ARG ...]

Runs the five stages against environment NAME's queues and bucket on LocalStack (AWS_ENDPOINT_URL), the way
Lambda's SQS event source mappings would, and starts each run's learner as a local process. Deploy the
environment first with \`bash scripts/localstack.sh deploy NAME\` (the CDK app's bucket and queues, through
LocalStack's CloudFormation). Stops cleanly on SIGTERM or SIGINT.

options:
  --env NAME           the environment (its queues are toolrl-NAME-*)
  --state-dir DIR      learner scratch and logs (default .localstack/workers/NAME)
  --learner-arg=ARG    an argument for every learner process; repeatable, e.g.
                       --learner-arg=--device --learner-arg=cpu (the = form, as ARG may start with --)
  -h, --help           show this help
`;

/** Bad flags or setup: printed without a stack, exit 2 (like the toolrl CLI's UsageError). */
class UsageError extends Error {
  override name = 'UsageError';
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        env: { type: 'string' },
        'state-dir': { type: 'string' },
        'learner-arg': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    // node:util's parse errors (unknown option, missing value) carry a code ERR_PARSE_ARGS_*.
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_'))
      throw new UsageError((err as Error).message);
    throw err;
  }
}

async function main(argv: string[]): Promise<void> {
  const values = parseOptions(argv);
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (!values.env) throw new UsageError('--env NAME is required');
  const client = clientOptions();
  if (!client.endpoint)
    throw new UsageError(
      'the local worker runs against LocalStack: set AWS_ENDPOINT_URL (e.g. http://127.0.0.1:4566)',
    );
  const resources = await resolveEnvironment(values.env, client);
  const emit = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);
  const worker = await startLocalWorker({
    resources,
    client,
    stateDir: values['state-dir'] ?? join(REPO_ROOT, '.localstack', 'workers', values.env),
    learnerArgs: values['learner-arg'] ?? [],
    emit,
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void worker.stop().then(() => {
      emit({ worker: 'stopped' });
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err) => {
    if (err instanceof UsageError) {
      process.stderr.write(`local-worker: ${err.message}\n${USAGE.split('\n')[0]}\n(--help for more)\n`);
      process.exit(2);
    }
    // A missing environment, region or credentials is the user's setup: its message says what to do.
    const setup = err instanceof EnvironmentNotFoundError ? err : awsSetupError(err);
    if (setup) {
      process.stderr.write(`local-worker: ${setup.message}\n`);
      process.exit(2);
    }
    process.stderr.write(
      `local-worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}

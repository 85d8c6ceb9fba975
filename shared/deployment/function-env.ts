// Names of the environment variables through which a deployed function learns its resources. The CDK
// house construct's bind helpers set them and the handlers' environment schemas read them.
import type { QueueName } from '#shared/topology';

const upper = (q: string) => q.toUpperCase().replace(/-/g, '_');

export const FUNCTION_ENV = {
  /** The environment's bucket (datasets, runs, policies, checkpoints). */
  bucket: 'TOOLRL_BUCKET',
  /** URL of a queue the function sends to, e.g. TOOLRL_QUEUE_URL_TOOL_CALLS. */
  queueUrl: (q: QueueName) => `TOOLRL_QUEUE_URL_${upper(q)}`,
  /** URL of the dead-letter queue of the queue the function consumes (a poison message goes there with its reason). */
  deadLetterQueueUrl: (q: QueueName) => `TOOLRL_DLQ_URL_${upper(q)}`,
  /** SecretId (ARN) of the Secrets Manager secret with the tools' API keys (read at cold start, never passed to the sandbox). */
  toolSecretsId: 'TOOLRL_TOOL_SECRETS_ID',
  /**
   * Name of the code-runner Lambda function (tool-call only): when set, the code_interpreter runs the model's
   * programs there, not in the calling process (shared/tools/code/lambda-runner.ts).
   */
  codeRunnerFunction: 'TOOLRL_CODE_RUNNER_FUNCTION',
  /** The learner's AWS Batch job queue and job definition (run-starter submits one job per run). */
  learnerJobQueue: 'TOOLRL_LEARNER_JOB_QUEUE',
  learnerJobDefinition: 'TOOLRL_LEARNER_JOB_DEFINITION',
  /** The deployment's environment name (dev, prod). */
  environment: 'TOOLRL_ENV',
  /**
   * Optional, rollout only: ONNX Runtime threads of the decoder (unset: the function's cores). The LocalStack worker
   * sets what an embedded run uses (half the cores), since its learner shares the machine as an embedded one does.
   */
  ortThreads: 'TOOLRL_ORT_THREADS',
  /**
   * Optional, rollout only: MiB of KV cache the decoder keeps between a trajectory's turns (unset: 1024). The
   * LocalStack worker sets what an embedded run uses (a sixth of the machine's memory, 1-4 GiB); an embedded run
   * and `toolrl eval` read it too, in place of that default.
   */
  kvCacheMb: 'TOOLRL_KV_CACHE_MB',
} as const;

/** `TOOLRL_KV_CACHE_MB` in bytes, or undefined when unset; a value that is not a whole number of MiB >= 1 is refused. */
export function kvCacheBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[FUNCTION_ENV.kvCacheMb]?.trim();
  if (!raw) return undefined;
  const mb = Number(raw);
  if (!Number.isInteger(mb) || mb < 1) {
    throw new Error(`${FUNCTION_ENV.kvCacheMb} must be a whole number of MiB, at least 1; got "${raw}"`);
  }
  return mb * 2 ** 20;
}

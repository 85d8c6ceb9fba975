// Finds one environment's resources by their names (shared/deployment/names.ts): the bucket and every queue's URL.
// Works against AWS and, with AWS_ENDPOINT_URL, LocalStack; used by `toolrl submit|status` and the e2e tests.
import { GetQueueUrlCommand, ListQueuesCommand, QueueDoesNotExist, SQSClient } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import {
  type AwsClientOptions,
  awsClientConfig,
  awsClientOptionsFromEnv,
  sqsClient,
} from '#shared/adapters/aws/clients';
import { bucketName, deadLetterQueueName, queueName } from '#shared/deployment/names';
import { QUEUES, type QueueName } from '#shared/topology';

export interface EnvironmentResources {
  readonly env: string;
  readonly bucket: string;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  readonly deadLetterQueueUrls: Readonly<Record<QueueName, string>>;
}

/** A resource of the environment is missing: it was not deployed in this account/region (or on this LocalStack). */
export class EnvironmentNotFoundError extends Error {
  override name = 'EnvironmentNotFoundError';
}

/** The AWS SDK found no region or no usable credentials: what to set, for a message without the SDK's stack. */
export class AwsSetupError extends Error {
  override name = 'AwsSetupError';
}

/** Names of the errors AWS answers to credentials it does not accept (expired, wrong, or of a deleted key). */
const REJECTED_CREDENTIALS = new Set([
  'ExpiredToken',
  'ExpiredTokenException',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
]);

/** How long a custom endpoint (LocalStack) gets to answer the first call before a command gives up. */
export const ENDPOINT_PROBE_MS = 5_000;

const where = (endpoint: string | undefined) =>
  endpoint ? `the AWS endpoint ${endpoint}` : 'AWS (check your network, proxy and region)';

/** A network failure, said plainly: nothing listens, the name does not resolve, or nobody answers. */
function networkError(err: Error, endpoint: string | undefined): AwsSetupError | undefined {
  const code = (err as { code?: string }).code;
  const local = endpoint ? ' (is LocalStack running? bash scripts/localstack.sh status)' : '';
  if (code === 'ECONNREFUSED')
    return new AwsSetupError(`cannot reach ${where(endpoint)}: connection refused${local}`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new AwsSetupError(
      `cannot reach ${where(endpoint)}: its host name does not resolve (${err.message})`,
    );
  if (err.name === 'TimeoutError' || code === 'ETIMEDOUT') {
    const ms = /(\d+) ms requestTimeout/.exec(err.message)?.[1];
    const within = ms ? ` within ${Number(ms) / 1000} s` : ' in time';
    return new AwsSetupError(
      `${where(endpoint)} did not answer${within}${
        endpoint
          ? ': it accepts connections but does not respond; restart it (bash scripts/localstack.sh stop && start)'
          : ` (${err.message})`
      }`,
    );
  }
  return undefined;
}

/**
 * An AwsSetupError explaining `err` when it is the SDK's missing-region or missing/rejected-credentials error, or
 * a network failure (refused, unresolvable, timed out); undefined for anything else (which is then a real failure,
 * reported with its stack).
 */
export function awsSetupError(
  err: unknown,
  endpoint: string | undefined = awsClientOptionsFromEnv().endpoint,
): AwsSetupError | undefined {
  if (err instanceof AwsSetupError) return err;
  if (!(err instanceof Error)) return undefined;
  const net = networkError(err, endpoint);
  if (net) return net;
  if (/^Region is missing/.test(err.message))
    return new AwsSetupError(
      'no AWS region: set AWS_REGION (e.g. export AWS_REGION=us-east-1) or a region in your AWS profile ' +
        '(aws configure)',
    );
  if (err.name === 'CredentialsProviderError')
    return new AwsSetupError(
      `no AWS credentials (${err.message}): sign in (aws sso login, or aws configure), or set AWS_PROFILE, ` +
        'or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any value works with AWS_ENDPOINT_URL for LocalStack)',
    );
  if (REJECTED_CREDENTIALS.has(err.name))
    return new AwsSetupError(
      `AWS rejected the credentials (${err.name}: ${err.message}): renew them and retry`,
    );
  return undefined;
}

/** Endpoint and region from the environment; without AWS_REGION the SDK reads the profile's region. */
export function clientOptions(env: NodeJS.ProcessEnv = process.env): AwsClientOptions {
  return awsClientOptionsFromEnv(env);
}

/** The account the credentials belong to and the region in effect (GetCallerIdentity needs no permission). */
export async function callerAccount(
  opts: AwsClientOptions = clientOptions(),
): Promise<{ account: string; region: string }> {
  const sts = new STSClient(awsClientConfig(opts));
  try {
    const region = await sts.config.region();
    const r = await sts.send(new GetCallerIdentityCommand({}));
    if (!r.Account) throw new Error('GetCallerIdentity returned no account');
    return { account: r.Account, region };
  } finally {
    sts.destroy();
  }
}

/** The environment's bucket name: TOOLRL_BUCKET when set, else derived from the account and region. */
export async function environmentBucket(
  env: string,
  opts: AwsClientOptions = clientOptions(),
): Promise<string> {
  if (process.env.TOOLRL_BUCKET) return process.env.TOOLRL_BUCKET;
  const { account, region } = await callerAccount(opts);
  return bucketName(env, account, region);
}

async function queueUrl(name: string, opts: AwsClientOptions, env: string): Promise<string> {
  try {
    const r = await sqsClient(opts).send(new GetQueueUrlCommand({ QueueName: name }));
    if (!r.QueueUrl) throw new Error(`GetQueueUrl ${name} returned no URL`);
    return r.QueueUrl;
  } catch (err) {
    if (err instanceof QueueDoesNotExist || (err as Error).name === 'AWS.SimpleQueueService.NonExistentQueue')
      throw new EnvironmentNotFoundError(
        `queue ${name} does not exist at ${opts.endpoint ?? `AWS (region ${opts.region ?? 'from your profile'})`}: ` +
          'deploy the environment first ' +
          (opts.endpoint
            ? `(on LocalStack: bash scripts/localstack.sh deploy ${env})`
            : `(npx cdk deploy --all -c env=${env})`),
      );
    throw err;
  }
}

/**
 * One call, one attempt, ENDPOINT_PROBE_MS to answer, against a custom endpoint: a LocalStack that is down or
 * wedged is then reported within seconds instead of after every retry of every call. AWS itself is not probed.
 */
export async function assertEndpointAnswers(opts: AwsClientOptions = clientOptions()): Promise<void> {
  if (!opts.endpoint) return;
  const client = new SQSClient({
    ...awsClientConfig(opts, ENDPOINT_PROBE_MS),
    useQueueUrlAsEndpoint: false,
    maxAttempts: 1,
  });
  try {
    await client.send(new ListQueuesCommand({ MaxResults: 1 }));
  } catch (err) {
    const net = err instanceof Error ? networkError(err, opts.endpoint) : undefined;
    if (net) throw net;
    // Anything else (credentials, permissions) is for the real calls to report.
  } finally {
    client.destroy();
  }
}

/** Looks up the environment's bucket and queues (throws EnvironmentNotFoundError naming what is missing). */
export async function resolveEnvironment(
  env: string,
  opts: AwsClientOptions = clientOptions(),
): Promise<EnvironmentResources> {
  await assertEndpointAnswers(opts);
  const specs = Object.values(QUEUES);
  const [bucket, urls, dlqUrls] = await Promise.all([
    environmentBucket(env, opts),
    Promise.all(specs.map((s) => queueUrl(queueName(env, s.name), opts, env))),
    Promise.all(specs.map((s) => queueUrl(deadLetterQueueName(env, s.name), opts, env))),
  ]);
  return {
    env,
    bucket,
    queueUrls: Object.fromEntries(specs.map((s, i) => [s.name, urls[i]!])) as Record<QueueName, string>,
    deadLetterQueueUrls: Object.fromEntries(specs.map((s, i) => [s.name, dlqUrls[i]!])) as Record<
      QueueName,
      string
    >,
  };
}

// Finds one environment's resources by their names (shared/aws/names.ts): the bucket and every queue's URL.
// Works against AWS and, with AWS_ENDPOINT_URL, LocalStack; used by `toolrl submit|status` and the e2e tests.
import { GetQueueUrlCommand, QueueDoesNotExist } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { type AwsClientOptions, awsClientOptionsFromEnv, sqsClient } from '#shared/adapters/aws/clients';
import { QUEUES, type QueueName } from '#shared/topology';
import { bucketName, deadLetterQueueName, queueName } from './names.ts';

export interface EnvironmentResources {
  readonly env: string;
  readonly bucket: string;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  readonly deadLetterQueueUrls: Readonly<Record<QueueName, string>>;
}

/** A resource of the environment is missing: it was not deployed (or bootstrapped) in this account/region. */
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

/**
 * An AwsSetupError explaining `err` when it is the SDK's missing-region or missing/rejected-credentials error;
 * undefined for anything else (which is then a real failure, reported with its stack).
 */
export function awsSetupError(err: unknown): AwsSetupError | undefined {
  if (!(err instanceof Error)) return undefined;
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
  const sts = new STSClient({
    ...(opts.region ? { region: opts.region } : {}),
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
  });
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
          `(npx cdk deploy --all -c env=${env})`,
      );
    throw err;
  }
}

/** Looks up the environment's bucket and queues (throws EnvironmentNotFoundError naming what is missing). */
export async function resolveEnvironment(
  env: string,
  opts: AwsClientOptions = clientOptions(),
): Promise<EnvironmentResources> {
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

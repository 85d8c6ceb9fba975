// One environment on LocalStack, deployed through LocalStack's CloudFormation from the template the CDK app
// synthesizes (localstack-template.ts): what the e2e suite, the benchmarks and `bash scripts/localstack.sh deploy
// ENV` run against. Its bucket and queues are then found by the names the CLI and the stages derive.
// One part is applied after the stack, because LocalStack 4.14's AWS::S3::Bucket provider ignores it: the buckets'
// LifecycleConfiguration (the rules that expire tagged trajectories and claim checks). It also ignores
// BucketEncryption, LoggingConfiguration, OwnershipControls and PublicAccessBlockConfiguration, which change
// nothing the pipeline does locally (S3 encrypts with SSE-S3 by default; nothing reads access logs there).
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  ListStackResourcesCommand,
  UpdateStackCommand,
} from '@aws-sdk/client-cloudformation';
import {
  DeleteObjectsCommand,
  type LifecycleRule,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
} from '@aws-sdk/client-s3';
import { type AwsClientOptions, awsClientConfig, s3Client } from '#shared/adapters/aws/clients';
import { assertEnvName } from '#shared/deployment/names';
import { type EnvironmentResources, resolveEnvironment } from '#shared/operator/environment';
import type { QueueName } from '#shared/topology';
import {
  type CfnTemplate,
  localStackTemplate,
  renameEnvironment,
  withVisibilityTimeouts,
} from './localstack-template.ts';

/** The one CloudFormation stack an environment is on LocalStack (on AWS it is two: storage and pipeline). */
export const localStackStackName = (env: string): string => `toolrl-${env}-localstack`;

/** Longest a create, update or delete may take before it is reported as stuck (LocalStack takes seconds). */
const STACK_WAIT_MS = 300_000;

export interface LocalStackDeployOptions {
  readonly env: string;
  /** LocalStack's endpoint: this template lacks the functions and the learner, so it is never for AWS. */
  readonly client: AwsClientOptions;
  /**
   * A template synthesized for another environment name, renamed to `env` (synthesis takes seconds to a minute;
   * a suite that deploys many environments synthesizes once). Synthesized for `env` when absent.
   */
  readonly template?: { readonly env: string; readonly template: CfnTemplate };
  /** Other visibility timeouts than the topology's, for tests that kill a worker (localstack-template.ts). */
  readonly visibilityTimeoutSec?: Partial<Record<QueueName, number>>;
}

function cloudFormation(client: AwsClientOptions): CloudFormationClient {
  if (!client.endpoint)
    throw new Error(
      'the LocalStack deployment needs AWS_ENDPOINT_URL (e.g. http://127.0.0.1:4566); deploy to AWS with `npx cdk deploy --all`',
    );
  return new CloudFormationClient(awsClientConfig(client));
}

/** LocalStack answers a service it was not started with this way; say how to get one that has it. */
function explain(err: unknown): unknown {
  const msg = err instanceof Error ? err.message : String(err);
  if (/not enabled|SERVICES/.test(msg))
    return new Error(
      `LocalStack did not accept the CloudFormation call (${msg}): restart it with ` +
        '`bash scripts/localstack.sh stop && bash scripts/localstack.sh start`, which enables cloudformation and iam',
    );
  return err;
}

/** Polls the stack until it reaches `want`; fails with its failed resources' reasons otherwise. */
async function waitFor(cfn: CloudFormationClient, StackName: string, want: string): Promise<void> {
  const end = Date.now() + STACK_WAIT_MS;
  for (;;) {
    let status: string | undefined;
    try {
      status = (await cfn.send(new DescribeStacksCommand({ StackName }))).Stacks?.[0]?.StackStatus;
    } catch (err) {
      if (want === 'DELETE_COMPLETE' && /does not exist/.test((err as Error).message)) return;
      throw err;
    }
    if (status === want) return;
    if (!status || /FAILED|ROLLBACK/.test(status) || (status.endsWith('_COMPLETE') && status !== want)) {
      const events = await cfn.send(new DescribeStackEventsCommand({ StackName }));
      const reasons = (events.StackEvents ?? [])
        .filter((e) => /FAILED/.test(e.ResourceStatus ?? ''))
        .map((e) => `${e.LogicalResourceId} (${e.ResourceType}): ${e.ResourceStatusReason}`);
      throw new Error(`stack ${StackName} is ${status}, not ${want}:\n${reasons.join('\n')}`);
    }
    if (Date.now() > end)
      throw new Error(`stack ${StackName} is still ${status} after ${STACK_WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stackExists(cfn: CloudFormationClient, StackName: string): Promise<boolean> {
  try {
    const s = (await cfn.send(new DescribeStacksCommand({ StackName }))).Stacks?.[0];
    return s !== undefined && s.StackStatus !== 'DELETE_COMPLETE';
  } catch (err) {
    if (/does not exist/.test((err as Error).message)) return false;
    throw err;
  }
}

/**
 * Creates environment `env` on LocalStack (or updates it to this checkout's template when its stack exists), and
 * returns its resources as `toolrl submit|status` and the local worker find them.
 */
export async function deployLocalStackEnvironment(o: LocalStackDeployOptions): Promise<EnvironmentResources> {
  const env = assertEnvName(o.env);
  const cfn = cloudFormation(o.client);
  try {
    let template = o.template
      ? renameEnvironment(o.template.template, o.template.env, env)
      : localStackTemplate(env);
    if (o.visibilityTimeoutSec) template = withVisibilityTimeouts(template, env, o.visibilityTimeoutSec);
    const StackName = localStackStackName(env);
    const TemplateBody = JSON.stringify(template);
    try {
      if (await stackExists(cfn, StackName)) {
        try {
          await cfn.send(new UpdateStackCommand({ StackName, TemplateBody }));
          await waitFor(cfn, StackName, 'UPDATE_COMPLETE');
        } catch (err) {
          if (!/No updates are to be performed/.test((err as Error).message)) throw err;
        }
      } else {
        await cfn.send(new CreateStackCommand({ StackName, TemplateBody }));
        await waitFor(cfn, StackName, 'CREATE_COMPLETE');
      }
      await applyLifecycleRules(cfn, StackName, template, o.client);
    } catch (err) {
      throw explain(err);
    }
  } finally {
    cfn.destroy();
  }
  return resolveEnvironment(env, o.client);
}

export interface CfnLifecycleRule {
  Id?: string;
  Status: 'Enabled' | 'Disabled';
  Prefix?: string;
  TagFilters?: { Key: string; Value: string }[];
  ExpirationInDays?: number;
  ExpiredObjectDeleteMarker?: boolean;
  NoncurrentVersionExpiration?: { NoncurrentDays: number };
  AbortIncompleteMultipartUpload?: { DaysAfterInitiation: number };
}

/** A CloudFormation lifecycle rule as S3's PutBucketLifecycleConfiguration takes it. */
export function s3LifecycleRule(r: CfnLifecycleRule): LifecycleRule {
  const tags = r.TagFilters ?? [];
  const filter =
    tags.length === 0
      ? { Prefix: r.Prefix ?? '' }
      : tags.length === 1 && !r.Prefix
        ? { Tag: tags[0] }
        : { And: { Prefix: r.Prefix, Tags: tags } };
  const known = new Set([
    'Id',
    'Status',
    'Prefix',
    'TagFilters',
    'ExpirationInDays',
    'ExpiredObjectDeleteMarker',
    'NoncurrentVersionExpiration',
    'AbortIncompleteMultipartUpload',
  ]);
  const unknown = Object.keys(r).filter((k) => !known.has(k));
  if (unknown.length > 0)
    throw new Error(
      `lifecycle rule ${r.Id ?? ''} has ${unknown.join(', ')}, which the LocalStack deployment does not apply`,
    );
  return {
    ID: r.Id,
    Status: r.Status,
    Filter: filter,
    ...(r.ExpirationInDays !== undefined
      ? { Expiration: { Days: r.ExpirationInDays } }
      : r.ExpiredObjectDeleteMarker
        ? { Expiration: { ExpiredObjectDeleteMarker: true } }
        : {}),
    ...(r.NoncurrentVersionExpiration ? { NoncurrentVersionExpiration: r.NoncurrentVersionExpiration } : {}),
    ...(r.AbortIncompleteMultipartUpload
      ? { AbortIncompleteMultipartUpload: r.AbortIncompleteMultipartUpload }
      : {}),
  };
}

/** Puts each bucket's lifecycle rules from the template on the bucket the stack created (see the module comment). */
async function applyLifecycleRules(
  cfn: CloudFormationClient,
  StackName: string,
  template: CfnTemplate,
  client: AwsClientOptions,
): Promise<void> {
  const physical = new Map(
    ((await cfn.send(new ListStackResourcesCommand({ StackName }))).StackResourceSummaries ?? []).map((r) => [
      r.LogicalResourceId,
      r.PhysicalResourceId,
    ]),
  );
  for (const [id, r] of Object.entries(template.Resources)) {
    const rules = (r.Properties?.LifecycleConfiguration as { Rules?: CfnLifecycleRule[] } | undefined)?.Rules;
    if (r.Type !== 'AWS::S3::Bucket' || !rules?.length) continue;
    const bucket = physical.get(id);
    if (!bucket) throw new Error(`stack ${StackName} has no bucket ${id}`);
    await s3Client(client).send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: bucket,
        LifecycleConfiguration: { Rules: rules.map(s3LifecycleRule) },
      }),
    );
  }
}

/** Every object version, so CloudFormation can delete the bucket (it refuses one that holds objects). */
async function emptyBucket(client: AwsClientOptions, bucket: string): Promise<void> {
  const s3 = s3Client(client);
  for (;;) {
    const page = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket }));
    const objects = [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])].map((v) => ({
      Key: v.Key!,
      VersionId: v.VersionId,
    }));
    if (objects.length === 0) return;
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects } }));
  }
}

/** Deletes environment `env`'s stack on LocalStack with everything in it (its buckets emptied first). */
export async function destroyLocalStackEnvironment(env: string, client: AwsClientOptions): Promise<void> {
  const cfn = cloudFormation(client);
  const StackName = localStackStackName(assertEnvName(env));
  try {
    if (!(await stackExists(cfn, StackName))) return;
    const listed = await cfn.send(new ListStackResourcesCommand({ StackName }));
    for (const r of listed.StackResourceSummaries ?? [])
      if (
        r.ResourceType === 'AWS::S3::Bucket' &&
        r.PhysicalResourceId &&
        r.ResourceStatus !== 'DELETE_COMPLETE'
      )
        await emptyBucket(client, r.PhysicalResourceId);
    await cfn.send(new DeleteStackCommand({ StackName }));
    await waitFor(cfn, StackName, 'DELETE_COMPLETE');
  } finally {
    cfn.destroy();
  }
}

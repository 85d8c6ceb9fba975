// The CDK app's own storage and queue resources, deployed through LocalStack's CloudFormation: the queues, their
// dead-letter queues and redrive, the data bucket and its upload notifications exist as the synthesized template
// says, under the names the CLI and the stages derive. (The rest of the e2e suite still creates its environments
// with shared/operator/bootstrap.ts.)
import { randomBytes } from 'node:crypto';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  ListStackResourcesCommand,
} from '@aws-sdk/client-cloudformation';
import {
  DeleteBucketCommand,
  DeleteObjectsCommand,
  GetBucketNotificationConfigurationCommand,
  GetBucketVersioningCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsClientConfig, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { type EnvironmentResources, resolveEnvironment } from '#shared/operator/environment';
import { NOTIFICATIONS, QUEUES } from '#shared/topology';
import { localStackTemplate } from '../../infra/lib/localstack-template.ts';
import { until } from './support/harness.ts';
import { assertLocalStackUp, localstack } from './support/localstack.ts';

const env = `cfn${randomBytes(3).toString('hex')}`;
const StackName = `toolrl-${env}-localstack`;
let cfn: CloudFormationClient;

/** Polls the stack until it reaches `want`; fails with its failed resources' reasons otherwise. */
async function waitFor(want: string): Promise<void> {
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
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Every object version, then the bucket (CloudFormation does not delete a bucket that holds objects). */
async function emptyAndDeleteBucket(bucket: string): Promise<void> {
  const s3 = s3Client(localstack());
  for (;;) {
    const page = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket }));
    const objects = [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])].map((v) => ({
      Key: v.Key!,
      VersionId: v.VersionId,
    }));
    if (objects.length === 0) break;
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects } }));
  }
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
}

let resources: EnvironmentResources;
beforeAll(async () => {
  await assertLocalStackUp();
  const health = (await (await fetch(`${localstack().endpoint}/_localstack/health`)).json()) as {
    services?: Record<string, string>;
  };
  for (const svc of ['cloudformation', 'iam'])
    if (!['running', 'available'].includes(health.services?.[svc] ?? ''))
      throw new Error(
        `LocalStack has ${svc} ${health.services?.[svc] ?? 'missing'}: restart it with scripts/localstack.sh, which adds it to SERVICES`,
      );
  cfn = new CloudFormationClient(awsClientConfig(localstack()));
  const template = localStackTemplate(env);
  await cfn.send(new CreateStackCommand({ StackName, TemplateBody: JSON.stringify(template) }));
  await waitFor('CREATE_COMPLETE');
  // Found by the names the CLI and the stages derive: a name the template got wrong fails here.
  resources = await resolveEnvironment(env, localstack());
}, 180_000);

afterAll(async () => {
  if (!cfn) return;
  const listed = await cfn.send(new ListStackResourcesCommand({ StackName })).catch(() => undefined);
  for (const r of listed?.StackResourceSummaries ?? [])
    if (r.ResourceType === 'AWS::S3::Bucket' && r.PhysicalResourceId)
      await emptyAndDeleteBucket(r.PhysicalResourceId).catch(() => undefined);
  await cfn.send(new DeleteStackCommand({ StackName }));
  await waitFor('DELETE_COMPLETE');
  cfn.destroy();
}, 180_000);

describe('the synthesized template on LocalStack CloudFormation', () => {
  it('creates every topology queue with its dead-letter queue and redrive, as the topology says', async () => {
    const sqs = sqsClient(localstack());
    for (const spec of Object.values(QUEUES)) {
      const attrs = async (url: string) =>
        (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] })))
          .Attributes ?? {};
      const queue = await attrs(resources.queueUrls[spec.name]);
      const dlq = await attrs(resources.deadLetterQueueUrls[spec.name]);
      expect(JSON.parse(queue.RedrivePolicy ?? '{}'), spec.name).toEqual({
        deadLetterTargetArn: dlq.QueueArn,
        maxReceiveCount: spec.maxReceiveCount,
      });
      expect(Number(queue.VisibilityTimeout), spec.name).toBe(spec.visibilityTimeoutSec);
      expect(dlq.RedrivePolicy, `${spec.name}-dlq has no redrive of its own`).toBeUndefined();
    }
  });

  it('creates the versioned data bucket with the upload notifications, and an upload reaches its queue', async () => {
    const s3 = s3Client(localstack());
    const versioning = await s3.send(new GetBucketVersioningCommand({ Bucket: resources.bucket }));
    expect(versioning.Status).toBe('Enabled');

    const sqs = sqsClient(localstack());
    const arn = async (url: string) =>
      (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
        .Attributes?.QueueArn;
    const notifications = await s3.send(
      new GetBucketNotificationConfigurationCommand({ Bucket: resources.bucket }),
    );
    const rules = (notifications.QueueConfigurations ?? []).map((q) => ({
      queue: q.QueueArn,
      events: q.Events,
      filter: Object.fromEntries(
        (q.Filter?.Key?.FilterRules ?? []).map((r) => [r.Name?.toLowerCase(), r.Value]),
      ),
    }));
    const want = await Promise.all(
      NOTIFICATIONS.map(async (n) => ({
        queue: await arn(resources.queueUrls[n.queue]),
        events: ['s3:ObjectCreated:*'],
        filter: { prefix: n.prefix, suffix: n.suffix },
      })),
    );
    expect(rules).toEqual(expect.arrayContaining(want));
    expect(rules).toHaveLength(want.length);

    // The notification works end to end: an uploaded dataset becomes a message on run-events (looked at by
    // its count, never received).
    await s3.send(
      new PutObjectCommand({ Bucket: resources.bucket, Key: 'runs/probe/input/train.parquet', Body: 'x' }),
    );
    await until(async () => {
      const a = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: resources.queueUrls['run-events'],
          AttributeNames: ['ApproximateNumberOfMessages'],
        }),
      );
      return Number(a.Attributes?.ApproximateNumberOfMessages) >= 1;
    }, 'the upload notification to reach run-events');
  });
});

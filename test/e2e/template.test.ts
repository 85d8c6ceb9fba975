// The CDK app's own storage and queue resources, deployed through LocalStack's CloudFormation: the queues, their
// dead-letter queues and redrive, the data bucket and its upload notifications exist as the synthesized template
// says, under the names the CLI and the stages derive. Every other e2e file deploys the same template renamed to an
// environment of its own (test/e2e/support/environment.ts); here it is synthesized afresh for this environment,
// which also holds the rename to what a synthesis under that name gives.
import { randomBytes } from 'node:crypto';
import {
  GetBucketNotificationConfigurationCommand,
  GetBucketVersioningCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { s3Client, sqsClient } from '#shared/adapters/aws/clients';
import type { EnvironmentResources } from '#shared/operator/environment';
import { NOTIFICATIONS, QUEUES } from '#shared/topology';
import {
  deployLocalStackEnvironment,
  destroyLocalStackEnvironment,
} from '../../infra/lib/localstack-stack.ts';
import {
  type CfnTemplate,
  localStackTemplate,
  renameEnvironment,
} from '../../infra/lib/localstack-template.ts';
import { until } from './support/harness.ts';
import { localstack } from './support/localstack.ts';

const env = `cfn${randomBytes(3).toString('hex')}`;
let synthesized: CfnTemplate;
let resources: EnvironmentResources;

beforeAll(async () => {
  synthesized = localStackTemplate(env);
  resources = await deployLocalStackEnvironment({
    env,
    client: localstack(),
    template: { env, template: synthesized },
  });
});

afterAll(async () => {
  if (resources) await destroyLocalStackEnvironment(env, localstack());
});

describe('the synthesized template on LocalStack CloudFormation', () => {
  it('is what every other e2e environment deploys: the suite-wide synthesis renamed equals this one', () => {
    const shared = inject('localStackTemplate');
    expect(renameEnvironment(shared.template, shared.env, env)).toEqual(synthesized);
    expect(JSON.stringify(synthesized)).toContain(`"toolrl-${env}-run-events"`);
  });

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

// Creates one environment's topology on LocalStack from the same declaration the CDK stacks read
// (shared/topology.ts): the bucket with versioning, every queue with its dead-letter queue and redrive policy,
// and the S3 notifications. Idempotent: running it again converges the attributes. Not for AWS (use cdk deploy).

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListObjectVersionsCommand,
  PutBucketNotificationConfigurationCommand,
  PutBucketVersioningCommand,
} from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { type AwsClientOptions, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { NOTIFICATIONS, QUEUES, type QueueName } from '#shared/topology';
import { assertEnvName, deadLetterQueueName, queueName } from '../deployment/names.ts';
import { clientOptions, type EnvironmentResources, environmentBucket } from './environment.ts';

/** SQS's maximum retention, as the CDK stack gives its dead-letter queues. */
const DLQ_RETENTION_SEC = 14 * 86_400;

export interface BootstrapOptions {
  readonly env: string;
  readonly client?: AwsClientOptions;
  /**
   * Shorter visibility timeouts than the topology's (which are sized for Lambda's timeouts), so a test that kills
   * a worker sees its messages again in seconds. Redrive, retention and everything else stay as declared.
   */
  readonly visibilityTimeoutSec?: Partial<Record<QueueName, number>>;
}

function assertLocal(opts: AwsClientOptions): void {
  if (!opts.endpoint)
    throw new Error(
      'the LocalStack bootstrap needs AWS_ENDPOINT_URL (e.g. http://127.0.0.1:4566); deploy to AWS with `npx cdk deploy`',
    );
}

async function createQueue(opts: AwsClientOptions, name: string, attributes: Record<string, string>) {
  const sqs = sqsClient(opts);
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  if (!QueueUrl) throw new Error(`CreateQueue ${name} returned no URL`);
  await sqs.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: attributes }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { url: QueueUrl, arn: Attributes?.QueueArn ?? '' };
}

export async function bootstrapEnvironment(o: BootstrapOptions): Promise<EnvironmentResources> {
  const env = assertEnvName(o.env);
  const opts = o.client ?? clientOptions();
  assertLocal(opts);
  const bucket = await environmentBucket(env, opts);
  const s3 = s3Client(opts);
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if ((err as Error).name !== 'BucketAlreadyOwnedByYou') throw err;
  }
  await s3.send(
    new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }),
  );

  const queueUrls = {} as Record<QueueName, string>;
  const deadLetterQueueUrls = {} as Record<QueueName, string>;
  const arns = {} as Record<QueueName, string>;
  for (const spec of Object.values(QUEUES)) {
    const dlq = await createQueue(opts, deadLetterQueueName(env, spec.name), {
      MessageRetentionPeriod: String(DLQ_RETENTION_SEC),
    });
    const q = await createQueue(opts, queueName(env, spec.name), {
      VisibilityTimeout: String(o.visibilityTimeoutSec?.[spec.name] ?? spec.visibilityTimeoutSec),
      MessageRetentionPeriod: String(spec.retentionSec),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: spec.maxReceiveCount }),
    });
    queueUrls[spec.name] = q.url;
    deadLetterQueueUrls[spec.name] = dlq.url;
    arns[spec.name] = q.arn;
  }

  await s3.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: bucket,
      NotificationConfiguration: {
        QueueConfigurations: NOTIFICATIONS.map((n) => ({
          QueueArn: arns[n.queue],
          Events: ['s3:ObjectCreated:*'],
          Filter: {
            Key: {
              FilterRules: [
                { Name: 'prefix', Value: n.prefix },
                { Name: 'suffix', Value: n.suffix },
              ],
            },
          },
        })),
      },
    }),
  );
  return { env, bucket, queueUrls, deadLetterQueueUrls };
}

/** Removes what bootstrapEnvironment created (every object version, the bucket, the queues). LocalStack only. */
export async function destroyEnvironment(
  resources: EnvironmentResources,
  client?: AwsClientOptions,
): Promise<void> {
  const opts = client ?? clientOptions();
  assertLocal(opts);
  const s3 = s3Client(opts);
  for (;;) {
    const page = await s3.send(new ListObjectVersionsCommand({ Bucket: resources.bucket }));
    const objects = [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])].map((v) => ({
      Key: v.Key!,
      VersionId: v.VersionId,
    }));
    if (objects.length === 0) break;
    await s3.send(new DeleteObjectsCommand({ Bucket: resources.bucket, Delete: { Objects: objects } }));
  }
  await s3.send(new DeleteBucketCommand({ Bucket: resources.bucket }));
  const sqs = sqsClient(opts);
  for (const url of [...Object.values(resources.queueUrls), ...Object.values(resources.deadLetterQueueUrls)])
    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
}

// `node --import tsx shared/operator/bootstrap.ts ENV` (what `bash scripts/localstack.sh bootstrap ENV` runs).
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const env = process.argv[2];
  if (!env) {
    process.stderr.write('usage: bootstrap.ts ENV   (with AWS_ENDPOINT_URL pointing at LocalStack)\n');
    process.exit(2);
  }
  bootstrapEnvironment({ env }).then(
    (r) => process.stdout.write(`${JSON.stringify(r, null, 2)}\n`),
    (err) => {
      process.stderr.write(`bootstrap: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

// `toolrl redrive --env ENV`: the environment's queues as a queue set, for pipeline/redrive.ts. The dead-letter
// queues are shared by the environment's runs, so only this run's messages are moved (each matched by the run its
// body names) and the others are left where they were; SQS's own StartMessageMoveTask moves a whole queue, every
// run's messages with it, so it is not used.
import { type AwsClientOptions, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import { type RedriveOptions, type RedriveResult, redriveRun } from '#shared/pipeline/redrive';
import type { QueueSet } from '#shared/ports/queue-set';
import { dlqName, QUEUES, type QueueName } from '#shared/topology';
import type { EnvironmentResources } from './environment.ts';

export function environmentQueues(r: EnvironmentResources, client: AwsClientOptions): QueueSet<SqsQueue> {
  const sqs = sqsClient(client);
  const names = Object.keys(QUEUES) as QueueName[];
  const of = (urls: Readonly<Record<QueueName, string>>, name: (q: QueueName) => string) =>
    Object.fromEntries(names.map((q) => [q, new SqsQueue(sqs, urls[q], name(q))])) as Record<
      QueueName,
      SqsQueue
    >;
  return {
    queues: of(r.queueUrls, (q) => q),
    dlqs: of(r.deadLetterQueueUrls, dlqName),
    close: async () => {},
  };
}

export function redriveEnvironmentRun(
  r: EnvironmentResources,
  runId: string,
  client: AwsClientOptions,
  opts: RedriveOptions = {},
): Promise<RedriveResult> {
  return redriveRun(new S3BlobStore(s3Client(client), r.bucket), environmentQueues(r, client), runId, opts);
}

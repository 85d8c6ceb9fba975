// The SQS adapter against LocalStack's SQS: what real SQS refuses (a 1.5 MB SendMessageBatch) the adapter never
// sends, and what it sends arrives whole (on the template's scored-groups queue).
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '#shared/adapters/aws/clients';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import type { EnvironmentResources } from '#shared/operator/environment';
import { MessageTooLargeError } from '#shared/ports/queue-limits';
import { deployTestEnvironment, destroyTestEnvironment } from './support/environment.ts';
import { until } from './support/harness.ts';
import { localstack } from './support/localstack.ts';

let resources: EnvironmentResources;
let url: string;
beforeAll(async () => {
  resources = await deployTestEnvironment('limits');
  url = resources.queueUrls['scored-groups'];
});
afterAll(() => destroyTestEnvironment(resources));

/** Eight trajectories of ~190 KB, a group of G = 8 with 4-6k tokens each. */
const trajectories = () =>
  Array.from({ length: 8 }, (_, i) => ({ body: JSON.stringify({ i, tokens: 'x'.repeat(190_000) }) }));

describe('SqsQueue on LocalStack', () => {
  it('sends a batch that is over 1 MiB in all as several requests, every message arriving', async () => {
    // GIVEN the batch that SQS refuses as one request
    const sqs = sqsClient(localstack());
    await expect(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: trajectories().map((e, i) => ({ Id: String(i), MessageBody: e.body })),
        }),
      ),
    ).rejects.toThrow(/Batch requests cannot be longer than 1048576 bytes/);
    // WHEN the adapter sends it
    const q = new SqsQueue(sqs, url, 'scored-groups');
    const ids = await q.sendBatch(trajectories());
    // THEN all eight are there (counted, not received)
    expect(new Set(ids.map((x) => x.messageId)).size).toBe(8);
    await until(async () => (await q.depth()).visible === 8, 'eight messages on the queue');
  });

  it('refuses a message over 256 KiB before any request, naming the queue', async () => {
    const q = new SqsQueue(sqsClient(localstack()), url, 'reward');
    await expect(q.send('x'.repeat(300_000))).rejects.toThrow(MessageTooLargeError);
    await expect(q.sendBatch([{ body: 'small' }, { body: 'y'.repeat(300_000) }])).rejects.toThrow(
      /reward: a message of 300000 bytes/,
    );
  });
});

// The SQS adapter against LocalStack's SQS: what real SQS refuses (a 1.5 MB SendMessageBatch) the adapter never
// sends, and what it sends arrives whole (on the template's scored-groups queue).
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsClientConfig, sqsClient } from '#shared/adapters/aws/clients';
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

  it('pools the sends and deletes of records that finish together into batch requests', async () => {
    // GIVEN a client of its own that counts its requests by command
    const counts = new Map<string, number>();
    const sqs = new SQSClient({ ...awsClientConfig(localstack()), useQueueUrlAsEndpoint: false });
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? 'unknown';
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return next(args);
      },
      { step: 'initialize', name: 'countRequests' },
    );
    const q = new SqsQueue(sqs, resources.queueUrls['tool-calls'], 'tool-calls');
    // WHEN 30 records each send one message in the same turn
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => q.sendBatch([{ body: `m${i}` }])));
    // THEN they went as three batches of ten, and each caller got its own message's id
    expect(counts.get('SendMessageBatchCommand')).toBe(3);
    expect(new Set(ids.map((x) => x[0]!.messageId)).size).toBe(30);
    await until(async () => (await q.depth()).visible === 30, 'thirty messages on the queue');
    // AND when 30 records each delete their message at once, three requests delete them all
    const received: string[] = [];
    while (received.length < 30)
      received.push(...(await q.receive({ maxMessages: 10, waitTimeSec: 1 })).map((m) => m.receiptHandle));
    await Promise.all(received.map((h) => q.deleteBatch([h])));
    expect(counts.get('DeleteMessageBatchCommand')).toBe(3);
    const depth = await q.depth();
    expect(depth.visible + depth.inFlight).toBe(0);
  });
});

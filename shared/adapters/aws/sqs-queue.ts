// The Queue on SQS (AWS SDK v3): standard queues, long polling, string message attributes.
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Queue, QueueDepth, ReceivedMessage, ReceiveOptions, SendOptions } from '#shared/ports/queue';
import { assertMessageFits, planBatches, SQS_LIMITS } from '#shared/ports/queue-limits';
import { AWS_TIMEOUTS } from './clients.ts';
import { RequestPool } from './request-pool.ts';

const attributes = (
  a: Readonly<Record<string, string>> | undefined,
): Record<string, MessageAttributeValue> | undefined =>
  a && Object.keys(a).length > 0
    ? Object.fromEntries(Object.entries(a).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]))
    : undefined;

/** `https://sqs.us-east-1.amazonaws.com/123456789012/q` -> `arn:aws:sqs:us-east-1:123456789012:q`. */
export function arnOfQueueUrl(url: string): string {
  const u = new URL(url);
  const [account = '', name = ''] = u.pathname.split('/').filter(Boolean);
  const region = /(?:^|\.)sqs\.([a-z0-9-]+)\./.exec(u.hostname)?.[1] ?? process.env.AWS_REGION ?? 'us-east-1';
  return `arn:aws:sqs:${region}:${account}:${name}`;
}

export class SqsQueue implements Queue {
  private visibility: Promise<number> | undefined;

  constructor(
    private readonly client: SQSClient,
    readonly url: string,
    readonly name: string,
    readonly arn: string = arnOfQueueUrl(url),
  ) {}

  async send(body: string, opts: SendOptions = {}): Promise<{ messageId: string }> {
    assertMessageFits(this.name, body, opts);
    const r = await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.url,
        MessageBody: body,
        ...(opts.delaySec ? { DelaySeconds: Math.round(opts.delaySec) } : {}),
        ...(opts.attributes ? { MessageAttributes: attributes(opts.attributes) } : {}),
      }),
    );
    return { messageId: r.MessageId ?? '' };
  }

  async sendBatch(
    entries: readonly { body: string; opts?: SendOptions }[],
  ): Promise<{ messageId: string }[]> {
    planBatches(this.name, entries); // a message over SQS's limits fails its caller here, before anything is sent
    return this.sends.submit(entries);
  }

  /**
   * Concurrent sends to this queue pooled into SendMessageBatch requests (request-pool.ts), by count and by bytes:
   * ten 190 KB trajectories are one request by count, and one SQS refuses by size. Up to four requests at once: a
   * send is on the way to the next stage.
   */
  private readonly sends = new RequestPool<{ body: string; opts?: SendOptions }, { messageId: string }>(
    4,
    (waiting) => planBatches(this.name, waiting)[0]?.length ?? 1,
    async (chunk) => {
      const r = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.url,
          Entries: chunk.map((e, i) => ({
            Id: String(i),
            MessageBody: e.body,
            ...(e.opts?.delaySec ? { DelaySeconds: Math.round(e.opts.delaySec) } : {}),
            ...(e.opts?.attributes ? { MessageAttributes: attributes(e.opts.attributes) } : {}),
          })),
        }),
      );
      const ok = new Map((r.Successful ?? []).map((s) => [s.Id, s.MessageId ?? '']));
      const failed = new Map((r.Failed ?? []).map((f) => [f.Id, `${f.Code}: ${f.Message}`]));
      return chunk.map((_, i) =>
        failed.has(String(i))
          ? new Error(`${this.name}: a message was not sent: ${failed.get(String(i))}`)
          : { messageId: ok.get(String(i)) ?? '' },
      );
    },
  );

  async receive(opts: ReceiveOptions = {}): Promise<ReceivedMessage[]> {
    try {
      const r = await this.client.send(
        new ReceiveMessageCommand({
          QueueUrl: this.url,
          MaxNumberOfMessages: Math.max(1, Math.min(10, opts.maxMessages ?? 1)),
          WaitTimeSeconds: Math.round(Math.min(20, opts.waitTimeSec ?? 0)),
          ...(opts.visibilityTimeoutSec !== undefined
            ? { VisibilityTimeout: Math.round(opts.visibilityTimeoutSec) }
            : {}),
          MessageSystemAttributeNames: [
            'ApproximateReceiveCount',
            'SentTimestamp',
            'ApproximateFirstReceiveTimestamp',
          ],
          MessageAttributeNames: ['All'],
        }),
        // A long poll is silent for up to 20 s by design: its own request timeout covers the wait.
        {
          requestTimeout: (Math.min(20, opts.waitTimeSec ?? 0) * 1000 + AWS_TIMEOUTS.requestMs) as number,
          ...(opts.signal ? { abortSignal: opts.signal } : {}),
        },
      );
      return (r.Messages ?? []).map((m) => ({
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
        sentAt: Number(m.Attributes?.SentTimestamp ?? 0),
        firstReceivedAt: Number(m.Attributes?.ApproximateFirstReceiveTimestamp ?? 0),
        attributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).flatMap(([k, v]) =>
            v.StringValue !== undefined ? [[k, v.StringValue]] : [],
          ),
        ),
      }));
    } catch (err) {
      if (opts.signal?.aborted) return [];
      throw err;
    }
  }

  async delete(receiptHandle: string): Promise<void> {
    await this.client.send(new DeleteMessageCommand({ QueueUrl: this.url, ReceiptHandle: receiptHandle }));
  }

  async deleteBatch(receiptHandles: readonly string[]): Promise<void> {
    await this.deletes.submit(receiptHandles);
  }

  /**
   * Concurrent deletes of this queue's messages pooled into DeleteMessageBatch requests, one at a time: the records
   * of a receive that finish while a delete is under way go in the next (a delete is off every record's path).
   */
  private readonly deletes = new RequestPool<string, true>(
    1,
    (waiting) => Math.min(waiting.length, SQS_LIMITS.maxBatchEntries),
    async (chunk) => {
      const r = await this.client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.url,
          Entries: chunk.map((h, i) => ({ Id: String(i), ReceiptHandle: h })),
        }),
      );
      const failed = new Map((r.Failed ?? []).map((f) => [f.Id, f.Message ?? f.Code ?? 'failed']));
      return chunk.map((_, i) =>
        failed.has(String(i)) ? new Error(`${this.name}: delete failed: ${failed.get(String(i))}`) : true,
      );
    },
  );

  async changeVisibility(receiptHandle: string, timeoutSec: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.url,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.round(timeoutSec),
      }),
    );
  }

  /** Read once (GetQueueAttributes), then kept: a stage's queue keeps its settings while the stage runs. */
  visibilityTimeout(): Promise<number> {
    this.visibility ??= this.client
      .send(new GetQueueAttributesCommand({ QueueUrl: this.url, AttributeNames: ['VisibilityTimeout'] }))
      .then((r) => Number(r.Attributes?.VisibilityTimeout ?? 30));
    // A failed read is not kept: the next call asks again.
    this.visibility.catch(() => (this.visibility = undefined));
    return this.visibility;
  }

  async depth(): Promise<QueueDepth> {
    const r = await this.client.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.url,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const a = r.Attributes ?? {};
    return {
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }
}

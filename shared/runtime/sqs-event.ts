// Builds the event Lambda's SQS event source mapping hands a function, from received queue messages.
import { createHash } from 'node:crypto';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { Queue, ReceivedMessage } from '#shared/ports/queue';

export function toSqsEvent(queue: Queue, messages: readonly ReceivedMessage[], region = 'local'): SQSEvent {
  return { Records: messages.map((m) => toSqsRecord(queue, m, region)) };
}

export function toSqsRecord(queue: Queue, m: ReceivedMessage, region = 'local'): SQSRecord {
  return {
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: 'toolrl-local-runtime',
      ApproximateFirstReceiveTimestamp: String(m.firstReceivedAt),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(m.attributes).map(([k, v]) => [
        k,
        { stringValue: v, stringListValues: [], binaryListValues: [], dataType: 'String' as const },
      ]),
    ),
    md5OfBody: createHash('md5').update(m.body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: queue.arn,
    awsRegion: region,
  };
}

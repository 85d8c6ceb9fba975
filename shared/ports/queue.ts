// The queue port: SQS's standard-queue semantics (at-least-once, visibility timeout, receive count,
// long poll). Both the SQS adapter and the embedded in-process queue implement exactly this.

export interface SendOptions {
  /** Seconds before the message becomes visible (SQS DelaySeconds, 0..900). */
  readonly delaySec?: number;
  /** String message attributes (e.g. the reason a message was dead-lettered). */
  readonly attributes?: Readonly<Record<string, string>>;
}

export interface ReceiveOptions {
  /** 1..10 (SQS's limit). */
  readonly maxMessages?: number;
  /** Long poll: wait up to this long for a first message (0..20 on SQS). */
  readonly waitTimeSec?: number;
  /** Overrides the queue's visibility timeout for these messages. */
  readonly visibilityTimeoutSec?: number;
  /** Aborts a long poll (Ctrl-C); the call then resolves with what it has (usually nothing). */
  readonly signal?: AbortSignal;
}

export interface ReceivedMessage {
  readonly messageId: string;
  /** Valid until the message is received again; deleting with a stale handle leaves the message in place. */
  readonly receiptHandle: string;
  readonly body: string;
  /** How many times the message has been received, this time included (SQS ApproximateReceiveCount). */
  readonly receiveCount: number;
  /** Epoch milliseconds. */
  readonly sentAt: number;
  readonly firstReceivedAt: number;
  readonly attributes: Readonly<Record<string, string>>;
}

export interface QueueDepth {
  /** Messages available for retrieval. */
  readonly visible: number;
  /** Received and not yet deleted or timed out. */
  readonly inFlight: number;
  /** Sent with a delay that has not elapsed. */
  readonly delayed: number;
}

export interface Queue {
  /** The logical name (`rollout`, `rollout-dlq`). */
  readonly name: string;
  /** The address a Lambda event record names as its source (an SQS ARN, or `embedded:<name>`). */
  readonly arn: string;
  send(body: string, opts?: SendOptions): Promise<{ messageId: string }>;
  /** Sends many (chunked by 10 for SQS); the ids in input order. */
  sendBatch(entries: readonly { body: string; opts?: SendOptions }[]): Promise<{ messageId: string }[]>;
  receive(opts?: ReceiveOptions): Promise<ReceivedMessage[]>;
  delete(receiptHandle: string): Promise<void>;
  deleteBatch(receiptHandles: readonly string[]): Promise<void>;
  /** Extends (or shortens, 0 = now) the visibility of a received message. */
  changeVisibility(receiptHandle: string, timeoutSec: number): Promise<void>;
  depth(): Promise<QueueDepth>;
  /** The queue's default visibility timeout, in seconds (what a received message is hidden for). */
  visibilityTimeout(): Promise<number>;
}

/** Message attribute names the pipeline sets. */
export const ATTR = {
  /** Why a message was sent to its dead-letter queue. */
  deadLetterReason: 'toolrl-dead-letter-reason',
  /** The queue it was consumed from before being dead-lettered. */
  sourceQueue: 'toolrl-source-queue',
  /** Its receive count when dead-lettered. */
  receiveCount: 'toolrl-receive-count',
} as const;

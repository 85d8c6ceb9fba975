// SQS's size limits, applied by construction: every adapter splits a batch with `planBatches`, and a message
// that cannot fit is refused before any request is made. The embedded queue enforces the same numbers, so a
// test on one machine fails where real SQS would refuse the request.
import { PermanentError } from './errors.ts';
import type { SendOptions } from './queue.ts';

export const SQS_LIMITS = {
  /**
   * One message, body and attributes. SQS accepts up to 1 MiB on queues created since 2025, but a queue
   * created before keeps 256 KiB; the claim check (200 KiB) keeps the pipeline's bodies well under both.
   */
  maxMessageBytes: 256 * 1024,
  /** One SendMessageBatch request: the sum of its messages (SQS refuses more with BatchRequestTooLong). */
  maxBatchBytes: 1024 * 1024,
  /** Entries per SendMessageBatch / DeleteMessageBatch / ReceiveMessage. */
  maxBatchEntries: 10,
} as const;

/** A message over SQS's size limit: a bug upstream of the claim check, never worth a retry. */
export class MessageTooLargeError extends PermanentError {
  override name = 'MessageTooLargeError';
}

/** The size SQS counts for a message: the UTF-8 body plus each attribute's name, data type and value. */
export function messageBytes(body: string, opts: SendOptions = {}): number {
  let n = Buffer.byteLength(body, 'utf8');
  for (const [k, v] of Object.entries(opts.attributes ?? {}))
    n += Buffer.byteLength(k, 'utf8') + 'String'.length + Buffer.byteLength(v, 'utf8');
  return n;
}

/** Throws MessageTooLargeError naming the queue and the size when one message is over the limit. */
export function assertMessageFits(queue: string, body: string, opts?: SendOptions): number {
  const bytes = messageBytes(body, opts);
  if (bytes > SQS_LIMITS.maxMessageBytes)
    throw new MessageTooLargeError(
      `${queue}: a message of ${bytes} bytes is over SQS's ${SQS_LIMITS.maxMessageBytes}-byte limit ` +
        '(a payload this large must go through the claim check)',
    );
  return bytes;
}

/**
 * Splits entries, in order, into requests of at most 10 messages and 1 MiB each. Every message is checked
 * first, so nothing is sent when one of them could never be.
 */
export function planBatches<E extends { body: string; opts?: SendOptions }>(
  queue: string,
  entries: readonly E[],
): E[][] {
  const sizes = entries.map((e) => assertMessageFits(queue, e.body, e.opts));
  const out: E[][] = [];
  let current: E[] = [];
  let bytes = 0;
  entries.forEach((e, i) => {
    const size = sizes[i]!;
    if (
      current.length > 0 &&
      (current.length >= SQS_LIMITS.maxBatchEntries || bytes + size > SQS_LIMITS.maxBatchBytes)
    ) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(e);
    bytes += size;
  });
  if (current.length > 0) out.push(current);
  return out;
}

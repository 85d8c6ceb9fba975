// SQS's size limits by construction: batches split by count and bytes, a message over 256 KiB refused before
// anything is sent, and the embedded queue refusing what SQS would refuse.
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { isPermanent } from '#shared/ports/errors';
import { MessageTooLargeError, messageBytes, planBatches, SQS_LIMITS } from '#shared/ports/queue-limits';

const KB = 1000;
const body = (bytes: number, c = 'x') => c.repeat(bytes);

describe('SQS limits', () => {
  it('counts the body in UTF-8 and every attribute (name, type, value)', () => {
    expect(messageBytes('é')).toBe(2);
    expect(messageBytes('ab', { attributes: { k: 'vv' } })).toBe(2 + 1 + 'String'.length + 2);
  });

  it('splits eight 190 KB trajectories into requests under 1 MiB (by count they were one request of 1.5 MB)', () => {
    const entries = Array.from({ length: 8 }, (_, i) => ({ body: body(190 * KB, String(i)) }));
    const batches = planBatches('reward', entries);
    expect(batches.map((b) => b.length)).toEqual([5, 3]);
    for (const b of batches)
      expect(b.reduce((n, e) => n + messageBytes(e.body), 0)).toBeLessThanOrEqual(SQS_LIMITS.maxBatchBytes);
    expect(batches.flat()).toEqual(entries); // order kept
  });

  it('splits small messages by count (10 per request)', () => {
    const entries = Array.from({ length: 23 }, (_, i) => ({ body: String(i) }));
    expect(planBatches('q', entries).map((b) => b.length)).toEqual([10, 10, 3]);
  });

  it('refuses the whole batch, naming the queue and size, when one message is over 256 KiB', () => {
    const entries = [{ body: 'ok' }, { body: body(SQS_LIMITS.maxMessageBytes + 1) }];
    expect(() => planBatches('scored-groups', entries)).toThrow(MessageTooLargeError);
    expect(() => planBatches('scored-groups', entries)).toThrow(
      /scored-groups: a message of 262145 bytes is over SQS's 262144-byte limit/,
    );
    let caught: unknown;
    try {
      planBatches('q', entries);
    } catch (err) {
      caught = err;
    }
    expect(isPermanent(caught)).toBe(true); // dead-lettered at once with its reason, never retried
  });

  it('a message exactly at the limit fits, attributes included', () => {
    const attributes = { reason: 'r' };
    const extra = messageBytes('', { attributes });
    expect(
      planBatches('q', [{ body: body(SQS_LIMITS.maxMessageBytes - extra), opts: { attributes } }]),
    ).toHaveLength(1);
  });
});

describe('EmbeddedQueue enforces the same limits', () => {
  it('refuses a send or a batch entry over 256 KiB and sends nothing of that batch', async () => {
    const q = new EmbeddedQueue({ name: 'reward', visibilityTimeoutSec: 30 });
    await expect(q.send(body(300 * KB))).rejects.toThrow(MessageTooLargeError);
    await expect(q.sendBatch([{ body: 'a' }, { body: body(300 * KB) }])).rejects.toThrow(/reward: a message/);
    expect(q.size).toBe(0);
    await q.sendBatch(Array.from({ length: 8 }, () => ({ body: body(190 * KB) })));
    expect(q.size).toBe(8);
    q.close();
  });
});

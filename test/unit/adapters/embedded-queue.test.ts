// The embedded queue keeps SQS's standard-queue semantics: these are the behaviours the pipeline relies on.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';

/** A clock the test moves by hand, so visibility timeouts are exact. */
function manualClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

function pair(clock = manualClock(), maxReceiveCount = 3) {
  const dlq = new EmbeddedQueue({ name: 'q-dlq', visibilityTimeoutSec: 30, now: clock.now });
  const q = new EmbeddedQueue({
    name: 'q',
    visibilityTimeoutSec: 10,
    maxReceiveCount,
    deadLetter: dlq,
    now: clock.now,
  });
  return { q, dlq, clock };
}

describe('EmbeddedQueue', () => {
  it('hides a received message for the visibility timeout, then redelivers it with a higher receive count', async () => {
    const { q, clock } = pair();
    await q.send('a');
    const [first] = await q.receive();
    expect(first?.body).toBe('a');
    expect(first?.receiveCount).toBe(1);
    clock.advance(9_999);
    expect(await q.receive()).toEqual([]);
    clock.advance(1);
    const [again] = await q.receive();
    expect(again?.messageId).toBe(first?.messageId);
    expect(again?.receiveCount).toBe(2);
    expect(again?.receiptHandle).not.toBe(first?.receiptHandle);
  });

  it('deletes with the current receipt handle only; a stale handle leaves the message in place', async () => {
    const { q, clock } = pair();
    await q.send('a');
    const [first] = await q.receive();
    clock.advance(10_000);
    const [second] = await q.receive();
    await q.delete(first!.receiptHandle); // stale: the message was received again since
    expect(q.size).toBe(1);
    await q.delete(second!.receiptHandle);
    expect(q.size).toBe(0);
    clock.advance(60_000);
    expect(await q.receive()).toEqual([]);
  });

  it('moves a message to the dead-letter queue on the receive after maxReceiveCount, keeping body and attributes', async () => {
    const { q, dlq, clock } = pair(manualClock(), 3);
    await q.send('poison', { attributes: { k: 'v' } });
    for (let i = 1; i <= 3; i++) {
      const [m] = await q.receive();
      expect(m?.receiveCount).toBe(i);
      clock.advance(10_000);
    }
    // Received 3 times (= maxReceiveCount) without a delete: the 4th receive redrives it instead.
    expect(await q.receive()).toEqual([]);
    expect(q.size).toBe(0);
    const [dead] = await dlq.receive();
    expect(dead?.body).toBe('poison');
    expect(dead?.attributes).toEqual({ k: 'v' });
  });

  it('browses without receiving: browsing any number of times neither hides nor dead-letters a message', async () => {
    const { q, dlq, clock } = pair(manualClock(), 1);
    await q.send('a', { attributes: { k: 'v' } });
    clock.advance(1);
    await q.send('b');
    for (let i = 0; i < 5; i++)
      expect(q.browse().map((m) => [m.body, m.receiveCount])).toEqual([
        ['a', 0],
        ['b', 0],
      ]);
    expect(q.browse()[0]?.attributes).toEqual({ k: 'v' });
    // with maxReceiveCount 1, receives like the old peek would have dead-lettered both on the next receive
    const got = await q.receive({ maxMessages: 10 });
    expect(got.map((m) => [m.body, m.receiveCount])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    expect(q.browse().map((m) => m.receiveCount)).toEqual([1, 1]);
    expect(dlq.browse()).toEqual([]);
  });

  it('returns at most maxMessages (capped at 10), oldest first', async () => {
    const { q } = pair();
    for (let i = 0; i < 12; i++) await q.send(String(i));
    const a = await q.receive({ maxMessages: 5 });
    expect(a.map((m) => m.body)).toEqual(['0', '1', '2', '3', '4']);
    const b = await q.receive({ maxMessages: 50 });
    expect(b).toHaveLength(7);
  });

  it('changeVisibility extends the lease, and 0 makes the message visible at once', async () => {
    const { q, clock } = pair();
    await q.send('a');
    const [m] = await q.receive();
    clock.advance(9_000);
    await q.changeVisibility(m!.receiptHandle, 20);
    clock.advance(19_000);
    expect(await q.receive()).toEqual([]);
    await q.changeVisibility(m!.receiptHandle, 0);
    const [again] = await q.receive();
    expect(again?.body).toBe('a');
    // The old handle is stale after the redelivery.
    await expect(q.changeVisibility(m!.receiptHandle, 5)).rejects.toThrow(/not in flight/);
  });

  it('honours a send delay', async () => {
    const { q, clock } = pair();
    await q.send('later', { delaySec: 5 });
    expect(await q.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
    expect(await q.receive()).toEqual([]);
    clock.advance(5_000);
    expect((await q.receive()).map((m) => m.body)).toEqual(['later']);
    expect(await q.depth()).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
  });

  it('long poll resolves as soon as a message is sent', async () => {
    const q = new EmbeddedQueue({ name: 'lp', visibilityTimeoutSec: 10 });
    const started = Date.now();
    const pending = q.receive({ waitTimeSec: 5, maxMessages: 10 });
    setTimeout(() => void q.send('hello'), 30);
    const got = await pending;
    expect(got.map((m) => m.body)).toEqual(['hello']);
    expect(Date.now() - started).toBeLessThan(2_000);
    q.close();
  });

  it('long poll wakes when an in-flight message times out, and returns empty when the wait ends', async () => {
    const q = new EmbeddedQueue({ name: 'lp2', visibilityTimeoutSec: 0.05 });
    await q.send('x');
    await q.receive();
    const again = await q.receive({ waitTimeSec: 2, visibilityTimeoutSec: 60 });
    expect(again[0]?.receiveCount).toBe(2);
    const empty = await q.receive({ waitTimeSec: 0.05 });
    expect(empty).toEqual([]);
    q.close();
  });

  it('an aborted long poll resolves with nothing', async () => {
    const q = new EmbeddedQueue({ name: 'lp3', visibilityTimeoutSec: 10 });
    const ac = new AbortController();
    const pending = q.receive({ waitTimeSec: 20, signal: ac.signal });
    ac.abort();
    expect(await pending).toEqual([]);
    await q.send('kept');
    expect((await q.receive()).map((m) => m.body)).toEqual(['kept']);
    q.close();
  });

  it('a journaled queue keeps undeleted messages and receive counts across a restart; in-flight ones come back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrl-q-'));
    const path = join(dir, 'q.jsonl');
    const q1 = new EmbeddedQueue({ name: 'j', visibilityTimeoutSec: 600, journalPath: path });
    await q1.send('deleted');
    await q1.send('in-flight');
    await q1.send('untouched');
    const [d] = await q1.receive();
    await q1.delete(d!.receiptHandle);
    await q1.receive(); // 'in-flight' now hidden for 600 s
    q1.close();

    const q2 = new EmbeddedQueue({ name: 'j', visibilityTimeoutSec: 600, journalPath: path });
    const got = await q2.receive({ maxMessages: 10 });
    expect(got.map((m) => [m.body, m.receiveCount])).toEqual([
      ['in-flight', 2],
      ['untouched', 1],
    ]);
    q2.close();
  });

  it('a message handed back untried (a consumer stopped cleanly) is visible at once and its receive is not counted, across a restart too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrl-q-'));
    const path = join(dir, 'q.jsonl');
    const dlq = new EmbeddedQueue({ name: 'j-dlq', visibilityTimeoutSec: 30 });
    const open = () =>
      new EmbeddedQueue({
        name: 'j',
        visibilityTimeoutSec: 600,
        maxReceiveCount: 1,
        deadLetter: dlq,
        journalPath: path,
      });
    const q1 = open();
    await q1.send('held');
    for (let i = 0; i < 3; i++) {
      const [m] = await q1.receive({ visibilityTimeoutSec: 3600 });
      expect(m?.receiveCount).toBe(1); // never past maxReceiveCount 1, however often it is handed back
      await q1.returnUntried(m!.receiptHandle);
    }
    const [m] = await q1.receive({ visibilityTimeoutSec: 3600 });
    await q1.returnUntried(m!.receiptHandle);
    q1.close();
    const q2 = open();
    expect((await q2.receive()).map((x) => [x.body, x.receiveCount])).toEqual([['held', 1]]);
    expect(await dlq.receive()).toEqual([]);
    q2.close();
  });

  it('the topology queue set wires every queue to its dead-letter queue', async () => {
    const set = createEmbeddedQueues({ visibilityTimeoutSec: { reward: 0 } });
    await set.queues.reward.send('r');
    for (let i = 0; i < 5; i++) expect(await set.queues.reward.receive()).toHaveLength(1);
    expect(await set.queues.reward.receive()).toEqual([]);
    expect((await set.dlqs.reward.receive()).map((m) => m.body)).toEqual(['r']);
    await set.close();
  });
});

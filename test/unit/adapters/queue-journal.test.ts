// The embedded queues' journals are rewritten to their live messages during a run: a long run's journal stays
// bounded, the queue delivers exactly what it would have, a reopen finds the same messages, and a crash at any
// point of a rewrite loses nothing.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import {
  type CompactionStep,
  type JournaledMessage,
  QueueJournal,
} from '#shared/adapters/embedded/queue-journal';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';
import { tempDirs } from '../../helpers/temp-dirs.ts';

const REPO_ROOT = join(import.meta.dirname, '..', '..', '..');

function manualClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const tempDir = tempDirs();
const tmp = () => tempDir('toolrl-journal-');

/** A message as the journal replays it, without its random id (two queues given the same work compare equal). */
const shape = ({ id: _id, ...m }: JournaledMessage) => m;

/**
 * The same traffic on a queue: a few long-lived messages (in flight, received every cycle, delayed) and `cycles`
 * send / receive / delete rounds of 2 KB bodies; returns every body delivered, in order.
 */
async function traffic(
  q: EmbeddedQueue,
  clock: ReturnType<typeof manualClock>,
  cycles: number,
  onCycle?: () => void,
) {
  const delivered: string[] = [];
  await q.send('in-flight');
  for (const visibilityTimeoutSec of [5, 3_600]) {
    const [m] = await q.receive({ visibilityTimeoutSec });
    delivered.push(m!.body);
    clock.advance(5_000); // visible again after the first receive; the second leaves it in flight for an hour
  }
  await q.send('untouched', { attributes: { kind: 'keep' } });
  await q.send('delayed', { delaySec: 900 });
  const filler = 'x'.repeat(2_000);
  for (let i = 0; i < cycles; i++) {
    await q.send(`${i}:${filler}`);
    const got = await q.receive({ maxMessages: 10 });
    for (const m of got) {
      delivered.push(m.body.slice(0, 12));
      // 'untouched' goes back untouched (its receive count is what the journal must keep)
      if (m.body === 'untouched') await q.changeVisibility(m.receiptHandle, 0);
      else await q.delete(m.receiptHandle);
    }
    clock.advance(1);
    onCycle?.();
  }
  return delivered;
}

describe('queue journal compaction', () => {
  it('keeps a journal bounded over many send/delete cycles, delivering and reopening exactly as without it', async () => {
    // GIVEN two journaled queues with the same traffic: one rewritten past 128 KiB at half dead, one never rewritten
    const dir = tmp();
    const clockA = manualClock();
    const clockB = manualClock();
    const compacted = join(dir, 'compacted.jsonl');
    const plain = join(dir, 'plain.jsonl');
    const minBytes = 128 * 1024;
    const a = new EmbeddedQueue({
      name: 'a',
      visibilityTimeoutSec: 30,
      journalPath: compacted,
      journalCompaction: { minBytes, maxDeadShare: 0.5 },
      now: clockA.now,
    });
    const b = new EmbeddedQueue({
      name: 'b',
      visibilityTimeoutSec: 30,
      journalPath: plain,
      journalCompaction: { minBytes: Number.POSITIVE_INFINITY },
      now: clockB.now,
    });

    // WHEN 1,000 cycles run through each (about 2.1 MB of journal entries)
    let largest = 0;
    const fromA = await traffic(a, clockA, 1_000, () => {
      largest = Math.max(largest, statSync(compacted).size);
    });
    const fromB = await traffic(b, clockB, 1_000);

    // THEN the rewritten journal never passed its bound (128 KiB, plus the one entry that crossed it), the other grew
    expect(largest).toBeLessThan(minBytes + 4_096);
    expect(statSync(plain).size).toBeGreaterThan(2_000_000);
    // ... each queue delivered the same bodies in the same order, and holds the same messages
    expect(fromA).toEqual(fromB);
    expect(fromA.filter((b) => b === 'untouched')).toHaveLength(1_000);
    expect(a.browse().map(({ messageId: _, ...m }) => m)).toEqual(
      b.browse().map(({ messageId: _, ...m }) => m),
    );
    // ... the in-flight message is still hidden and the delayed one still delayed while the process runs
    expect(await a.depth()).toEqual(await b.depth());
    expect(await a.depth()).toEqual({ visible: 1, inFlight: 1, delayed: 1 });

    // ... and both journals replay to the same messages: bodies, attributes, receive counts, send and visible times
    a.close();
    b.close();
    expect(QueueJournal.read(compacted).map(shape)).toEqual(QueueJournal.read(plain).map(shape));
    expect(QueueJournal.read(compacted).map((m) => [m.body, m.receiveCount])).toEqual([
      ['in-flight', 2],
      ['untouched', 1_000],
      ['delayed', 0],
    ]);

    // WHEN reopened
    const reopened = new EmbeddedQueue({
      name: 'a',
      visibilityTimeoutSec: 30,
      journalPath: compacted,
      now: clockA.now,
    });
    // THEN the in-flight one is back (its lease died with the process), in send order, and the delay holds
    expect((await reopened.receive({ maxMessages: 10 })).map((m) => [m.body, m.receiveCount])).toEqual([
      ['in-flight', 3],
      ['untouched', 1_001],
    ]);
    expect(await reopened.receive()).toEqual([]);
    clockA.advance(900_000);
    const later = await reopened.receive({ maxMessages: 10 });
    expect(later.find((m) => m.body === 'delayed')?.receiveCount).toBe(1);
    reopened.close();
  });

  it.each<CompactionStep>(['tmp-partly-written', 'tmp-written', 'renamed'])(
    'a crash at %s leaves a journal that reopens to the same live messages',
    (step) => {
      // GIVEN a journal rewritten past 4 KiB, with a crash simulated at one step of its first rewrite
      const path = join(tmp(), 'q.jsonl');
      const { journal } = QueueJournal.open(path, { minBytes: 4_096 });
      journal.onCompactionStep = (at) => {
        if (at === step) throw new Error(`simulated crash at ${at}`);
      };
      const live = new Map<string, JournaledMessage>();
      const send = (i: number) => {
        const m: JournaledMessage = {
          id: `m${i}`,
          body: `body ${i} ${'y'.repeat(200)}`,
          attributes: { i: String(i) },
          sentAt: 1_000 + i,
          visibleAt: 1_000 + i + (i % 3 === 0 ? 60_000 : 0),
          receiveCount: 0,
          firstReceivedAt: 0,
        };
        live.set(m.id, m);
        journal.send({ ...m });
      };

      // WHEN messages are sent, some received, four in five deleted, until the rewrite crashes
      let crashed: unknown;
      try {
        for (let i = 0; i < 200; i++) {
          send(i);
          if (i % 10 === 5) {
            const m = live.get(`m${i}`)!;
            m.receiveCount = 2;
            m.firstReceivedAt = 5_000 + i;
            journal.recv(m.id, 2, m.firstReceivedAt);
          }
          if (i % 5 !== 0) {
            live.delete(`m${i}`);
            journal.del(`m${i}`);
          }
        }
      } catch (err) {
        crashed = err;
      }
      expect(String(crashed)).toContain(`simulated crash at ${step}`);
      expect(journal.compactions).toBe(0);

      // THEN the files on disk replay to exactly the messages live when it crashed, in send order
      expect(QueueJournal.read(path)).toEqual([...live.values()]);
      // ... a leftover half-written rewrite is only ever a file beside the journal
      expect(existsSync(`${path}.compact`)).toBe(step !== 'renamed');
      // ... and a reopen gives them too, and leaves a journal that keeps working
      const again = QueueJournal.open(path, { minBytes: 4_096 });
      expect(again.messages).toEqual([...live.values()]);
      again.journal.del('m0');
      again.journal.close();
      expect(QueueJournal.read(path)).toEqual([...live.values()].filter((m) => m.id !== 'm0'));
    },
  );

  it("keeps the journals' owner across rewrites: another process still cannot open them", async () => {
    // GIVEN a run's queue set whose journals are rewritten past 32 KiB
    const dir = tmp();
    const set = createEmbeddedQueues({ journalDir: dir, journalCompaction: { minBytes: 32_768 } });
    const owner = readFileSync(join(dir, 'owner.json'), 'utf8');
    const reward = join(dir, 'reward.jsonl');
    try {
      // WHEN enough messages go through the reward queue for several rewrites
      let appended = 0;
      for (let i = 0; i < 200; i++) {
        const body = `${i}:${'z'.repeat(1_000)}`;
        appended += body.length;
        await set.queues.reward.send(body);
        const [m] = await set.queues.reward.receive();
        await set.queues.reward.delete(m!.receiptHandle);
      }
      expect(statSync(reward).size).toBeLessThan(appended / 4);

      // THEN the claim is this process's still, and a second process (a `train --resume`) is refused
      expect(readFileSync(join(dir, 'owner.json'), 'utf8')).toBe(owner);
      const script =
        "const { createEmbeddedQueues } = await import('#shared/adapters/embedded/queues');" +
        'try { createEmbeddedQueues({ journalDir: process.argv[1] }); console.log("opened"); }' +
        ' catch (err) { console.log(err.name, err.message); }';
      const out = execFileSync(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script, dir],
        {
          cwd: REPO_ROOT,
          encoding: 'utf8',
        },
      );
      expect(out).toContain(`JournalsInUseError the queues in ${dir} are held by process ${process.pid}`);
    } finally {
      await set.close();
    }
  });
});

// The local runtime's event source mapping: batching, concurrency, partial batch responses, whole-batch
// failure on a throw, and dead-lettering through the shared batch handler.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { GIVE_BACK, giveBackSec, sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { LEASE_STALE_MS } from '#shared/pipeline/learner-lease';
import { PermanentError } from '#shared/ports/errors';
import { silentLog } from '#shared/ports/log';
import { ATTR } from '#shared/ports/queue';
import type { StageContext } from '#shared/ports/stage-context';
import { EventSourceMapping, POLLERS, type SqsHandler } from '#shared/runtime/event-source-mapping';
import { QUEUES } from '#shared/topology';
import { HANG_MS } from '../../helpers/hang.ts';

const mappings: EventSourceMapping[] = [];
afterEach(async () => {
  for (const m of mappings.splice(0)) await m.stop();
});

function setup(maxReceiveCount = 3) {
  const dlq = new EmbeddedQueue({ name: 'work-dlq', visibilityTimeoutSec: 30 });
  const queue = new EmbeddedQueue({
    name: 'work',
    visibilityTimeoutSec: 30,
    maxReceiveCount,
    deadLetter: dlq,
  });
  const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-esm-')));
  const ctx: StageContext = { blobs, queues: {}, deadLetter: dlq, log: silentLog, now: () => new Date() };
  return { queue, dlq, ctx };
}

function run(
  queue: EmbeddedQueue,
  handler: SqsHandler,
  opts: Partial<{
    batchSize: number;
    windowSec: number;
    concurrency: number;
    retryAfterSec: number;
    heartbeatSec: number;
  }> = {},
) {
  const m = new EventSourceMapping({
    name: 'work',
    queue,
    handler,
    batchSize: opts.batchSize ?? 10,
    maxBatchingWindowSec: opts.windowSec ?? 0,
    maxConcurrency: opts.concurrency ?? 1,
    waitTimeSec: 0.05,
    ...(opts.retryAfterSec !== undefined ? { retryAfterSec: opts.retryAfterSec } : {}),
    ...(opts.heartbeatSec !== undefined ? { heartbeatSec: opts.heartbeatSec } : {}),
  });
  mappings.push(m);
  m.start();
  return m;
}

async function until(cond: () => boolean | Promise<boolean>, ms = HANG_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const ItemSchema = z.object({ n: z.number().int() });

describe('EventSourceMapping + sqsBatchHandler', () => {
  it('a poison message in a batch of ten: nine handled once, the bad one dead-lettered with its reason', async () => {
    const { queue, dlq, ctx } = setup();
    const handled: number[] = [];
    const handler = sqsBatchHandler(ctx, {
      name: 'work',
      schema: ItemSchema,
      maxReceiveCount: 3,
      handle: async (m) => void handled.push(m.n),
    });
    const bodies = Array.from({ length: 10 }, (_, i) =>
      i === 4 ? '{"n": "four"}' : JSON.stringify({ n: i }),
    );
    await queue.sendBatch(bodies.map((body) => ({ body })));
    const m = run(queue, handler, { batchSize: 10, windowSec: 0.2 });
    await until(() => queue.size === 0);
    await m.stop();
    expect(m.stats.invocations).toBe(1);
    expect(handled.sort()).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9]);
    const [dead] = dlq.browse();
    expect(dead?.body).toBe('{"n": "four"}');
    expect(dead?.attributes[ATTR.deadLetterReason]).toMatch(/invalid message.*n/s);
    expect(dead?.attributes[ATTR.sourceQueue]).toBe('embedded:work');
  });

  it('a transient failure is retried alone; its siblings are deleted after one success', async () => {
    const { queue, ctx } = setup();
    const calls = new Map<number, number>();
    const handler = sqsBatchHandler(ctx, {
      name: 'work',
      schema: ItemSchema,
      maxReceiveCount: 3,
      handle: async (m) => {
        calls.set(m.n, (calls.get(m.n) ?? 0) + 1);
        if (m.n === 2 && calls.get(2) === 1) throw new Error('flaky');
      },
    });
    for (let i = 0; i < 5; i++) await queue.send(JSON.stringify({ n: i }));
    const m = run(queue, handler, { batchSize: 5, retryAfterSec: 0 });
    await until(() => queue.size === 0);
    expect([...calls.entries()].sort()).toEqual([
      [0, 1],
      [1, 1],
      [2, 2],
      [3, 1],
      [4, 1],
    ]);
    expect(m.stats.recordsFailed).toBe(1);
  });

  it('a service call that fails transiently is retried inside the record: handled on its first receive', async () => {
    // GIVEN a stage whose first call fails as a refused connection does (the SDK's error carries code ECONNREFUSED)
    const { queue, ctx } = setup();
    const counts: number[] = [];
    let calls = 0;
    const handler = sqsBatchHandler(ctx, {
      name: 'work',
      schema: ItemSchema,
      maxReceiveCount: 3,
      handle: async (_m, meta) => {
        calls++;
        counts.push(meta.receiveCount);
        if (calls === 1)
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), { code: 'ECONNREFUSED' });
      },
    });
    await queue.send(JSON.stringify({ n: 1 }));
    // WHEN the mapping runs it (no runtime retry: a failure would wait out the 30 s visibility timeout)
    const m = run(queue, handler, { batchSize: 1 });
    await until(() => queue.size === 0);
    // THEN the second attempt ran in the same invocation, on the same receive, and nothing failed
    expect(counts).toEqual([1, 1]);
    expect(m.stats.recordsFailed).toBe(0);
  });

  it('a record that still fails is given back visible after GIVE_BACK, not after its visibility timeout', async () => {
    // GIVEN a stage that knows its own queue (as on Lambda) and fails with an error that is not a service's
    const { queue, ctx } = setup();
    const changed: number[] = [];
    const source = Object.create(queue) as EmbeddedQueue;
    source.changeVisibility = async (handle, sec) => {
      changed.push(sec);
      await queue.changeVisibility(handle, 0); // seen by the test at once; what was asked is recorded above
    };
    const receives: number[] = [];
    const handler = sqsBatchHandler(
      { ...ctx, source },
      {
        name: 'work',
        schema: ItemSchema,
        maxReceiveCount: 3,
        handle: async (_m, meta) => {
          receives.push(meta.receiveCount);
          if (meta.receiveCount < 3) throw new Error('judge down');
        },
      },
    );
    await queue.send(JSON.stringify({ n: 1 }));
    run(queue, handler, { batchSize: 1 });
    await until(() => queue.size === 0);
    // THEN each failure asked for the backoff of its receive, capped by the queue's 30 s visibility timeout
    expect(receives).toEqual([1, 2, 3]);
    expect(changed).toEqual([giveBackSec(1, 30), giveBackSec(2, 30)]);
    expect(giveBackSec(1, 5400)).toBe(GIVE_BACK.baseSec);
    expect(giveBackSec(3, 5400)).toBe(4 * GIVE_BACK.baseSec);
    expect(giveBackSec(1, 30)).toBe(30);
  });

  it("the backoffs before a record's last receive outlast the learner lease's takeover", () => {
    // A run-starter retrying on a lease whose holder died must reach the takeover before it is dead-lettered.
    const maxReceiveCount = QUEUES['run-events'].maxReceiveCount;
    const visibility = QUEUES['run-events'].visibilityTimeoutSec;
    let waited = 0;
    for (let receive = 1; receive < maxReceiveCount; receive++) waited += giveBackSec(receive, visibility);
    expect(waited * 1000).toBeGreaterThan(LEASE_STALE_MS);
  });

  it('a handler that throws fails its whole batch: every record is redelivered', async () => {
    const { queue } = setup();
    let invocations = 0;
    const seen: string[][] = [];
    const handler: SqsHandler = async (event) => {
      invocations++;
      seen.push(event.Records.map((r) => r.attributes.ApproximateReceiveCount));
      if (invocations === 1) throw new Error('crash after partial work');
      return { batchItemFailures: [] };
    };
    for (let i = 0; i < 3; i++) await queue.send(String(i));
    run(queue, handler, { batchSize: 3, retryAfterSec: 0 });
    await until(() => queue.size === 0);
    expect(seen).toEqual([
      ['1', '1', '1'],
      ['2', '2', '2'],
    ]);
  });

  it.each([
    ['an unknown id', { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] }],
    ['an empty id', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a null id', { batchItemFailures: [{ itemIdentifier: null }] }],
    ['a misspelt key', { batchItemFailures: [{ itemIdentifer: 'x' }] }],
    ['not a list', { batchItemFailures: 'all of them' }],
  ])('a partial batch response with %s fails the whole batch, as Lambda does', async (_, bad) => {
    const { queue } = setup();
    const seen: string[][] = [];
    const handler = (async (event) => {
      seen.push(event.Records.map((r) => r.attributes.ApproximateReceiveCount));
      return seen.length === 1 ? bad : { batchItemFailures: [] };
    }) as SqsHandler;
    for (let i = 0; i < 2; i++) await queue.send(String(i));
    const m = run(queue, handler, { batchSize: 2, windowSec: 30, retryAfterSec: 0 });
    await until(() => queue.size === 0);
    expect(seen).toEqual([
      ['1', '1'],
      ['2', '2'],
    ]);
    expect(m.stats).toMatchObject({ recordsFailed: 2, handlerErrors: 1 });
  });

  it('an empty or absent partial batch response deletes every record', async () => {
    const { queue } = setup();
    const responses = [undefined, null, {}, { batchItemFailures: null }, { batchItemFailures: [] }];
    let calls = 0;
    const handler = (async () => responses[calls++]) as SqsHandler;
    for (let i = 0; i < responses.length; i++) await queue.send(String(i));
    const m = run(queue, handler, { batchSize: 1 });
    await until(() => queue.size === 0);
    expect(m.stats).toMatchObject({ invocations: 5, recordsSucceeded: 5, recordsFailed: 0 });
  });

  it('on the last allowed receive a transient failure is dead-lettered with its reason and attempt count', async () => {
    const { queue, dlq, ctx } = setup(2);
    const handler = sqsBatchHandler(ctx, {
      name: 'work',
      schema: ItemSchema,
      maxReceiveCount: 2,
      handle: async () => {
        throw new Error('tool server down');
      },
    });
    await queue.send('{"n": 1}');
    run(queue, handler, { retryAfterSec: 0 });
    await until(async () => (await dlq.depth()).visible === 1);
    const [dead] = dlq.browse();
    expect(dead?.attributes[ATTR.deadLetterReason]).toBe('Error: tool server down (after 2 attempts)');
    expect(queue.size).toBe(0);
  });

  it('a PermanentError goes to the dead-letter queue on its first receive', async () => {
    const { queue, dlq, ctx } = setup();
    let attempts = 0;
    const handler = sqsBatchHandler(ctx, {
      name: 'work',
      schema: ItemSchema,
      maxReceiveCount: 5,
      handle: async () => {
        attempts++;
        throw new PermanentError('dataset row 3: prompt is empty');
      },
    });
    await queue.send('{"n": 1}');
    run(queue, handler);
    await until(async () => (await dlq.depth()).visible === 1);
    expect(attempts).toBe(1);
    const [dead] = dlq.browse();
    expect(dead?.attributes[ATTR.deadLetterReason]).toBe('PermanentError: dataset row 3: prompt is empty');
  });

  /** One message on a queue whose clock is the test's, and a handler (started by `start`) that holds it until `finish`. */
  async function slowBatch() {
    const clock = { t: 0 };
    const queue = new EmbeddedQueue({ name: 'slow', visibilityTimeoutSec: 30, now: () => clock.t });
    await queue.send('{"n": 1}');
    let calls = 0;
    let finish!: () => void;
    const slow = new Promise<void>((r) => (finish = r));
    const handler: SqsHandler = async () => {
      calls++;
      await slow;
      return undefined;
    };
    return {
      clock,
      queue,
      calls: () => calls,
      finish: () => finish(),
      start: (heartbeatSec: number) => run(queue, handler, { batchSize: 1, concurrency: 2, heartbeatSec }),
    };
  }

  it('keeps a batch hidden while its handler runs past the visibility timeout: handled once, then deleted', async () => {
    // The queue's clock is the test's: it moves only after a renewal was seen, so the outcome does not depend on
    // how fast the machine runs the renewals' timer.
    const { clock, queue, calls, finish, start } = await slowBatch();
    const renewals: number[] = [];
    const renew = queue.changeVisibility.bind(queue);
    queue.changeVisibility = async (handle, sec) => {
      renewals.push(clock.t);
      return renew(handle, sec);
    };
    let receivesDone = 0;
    const receive = queue.receive.bind(queue);
    queue.receive = async (o) => receive(o).finally(() => void receivesDone++);
    start(0.01);
    await until(() => calls() === 1);
    // Three visibility timeouts' worth of clock while the handler runs, each move after a renewal at the old time.
    for (const sec of [20, 40, 60, 80]) {
      const seen = renewals.filter((at) => at === clock.t).length;
      await until(() => renewals.filter((at) => at === clock.t).length > seen);
      clock.t = sec * 1000;
    }
    const polled = receivesDone;
    await until(() => receivesDone > polled + 2);
    expect(await queue.depth()).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    expect(calls()).toBe(1);
    finish();
    await until(() => queue.size === 0);
    expect(calls()).toBe(1);
  });

  it('without renewals (heartbeatSec 0) a handler slower than the visibility timeout gets its message twice', async () => {
    const { clock, calls, finish, start } = await slowBatch();
    start(0);
    await until(() => calls() === 1);
    clock.t = 31_000;
    await until(() => calls() === 2);
    finish();
  });

  it('never runs more than maxConcurrency batches at once', async () => {
    const { queue } = setup();
    let active = 0;
    let peak = 0;
    const handler: SqsHandler = async () => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, 20));
      active--;
      return undefined;
    };
    for (let i = 0; i < 12; i++) await queue.send(String(i));
    run(queue, handler, { batchSize: 1, concurrency: 3 });
    await until(() => queue.size === 0);
    expect(peak).toBe(3);
  });

  it('feeds 64 concurrent invocations from at most POLLERS long polls, each receive taking up to ten messages', async () => {
    // GIVEN a queue whose receives are counted while they are open, and 64 messages whose handlers all wait for
    // each other (a barrier): the batch completes only if all 64 run at once.
    const { queue } = setup();
    let open = 0;
    let peakOpen = 0;
    const sizes: number[] = [];
    const counted = Object.create(queue) as EmbeddedQueue;
    counted.receive = async (o) => {
      open++;
      peakOpen = Math.max(peakOpen, open);
      try {
        const got = await queue.receive(o);
        if (got.length) sizes.push(got.length);
        return got;
      } finally {
        open--;
      }
    };
    let arrived = 0;
    let release!: () => void;
    const all = new Promise<void>((r) => (release = r));
    const handler: SqsHandler = async () => {
      if (++arrived === 64) release();
      await all;
      return undefined;
    };
    await queue.sendBatch(Array.from({ length: 10 }, (_, i) => ({ body: String(i) })));
    for (let i = 10; i < 64; i += 9)
      await queue.sendBatch(Array.from({ length: Math.min(9, 64 - i) }, (_, j) => ({ body: String(i + j) })));
    // WHEN a mapping with batch size 1 and concurrency 256 (the embedded rollouts') runs
    const m = new EventSourceMapping({
      name: 'work',
      queue: counted,
      handler,
      batchSize: 1,
      maxBatchingWindowSec: 0,
      maxConcurrency: 256,
      waitTimeSec: 0.05,
    });
    mappings.push(m);
    m.start();
    // THEN all 64 run at once, from no more than POLLERS receives open at a time, some taking several messages
    await until(() => queue.size === 0);
    expect(arrived).toBe(64);
    expect(peakOpen).toBeLessThanOrEqual(POLLERS);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
  });

  it('gathers messages that arrive within the batching window into one batch', async () => {
    const { queue } = setup();
    const sizes: number[] = [];
    const handler: SqsHandler = async (e) => void sizes.push(e.Records.length);
    // A window far longer than any stall: the batch closes when it is full, not when the window ends.
    run(queue, handler, { batchSize: 10, windowSec: 60 });
    await queue.send('a');
    await new Promise((r) => setTimeout(r, 50));
    await queue.sendBatch(Array.from({ length: 9 }, (_, i) => ({ body: String(i) })));
    await until(() => queue.size === 0);
    expect(sizes).toEqual([10]);
  });
});

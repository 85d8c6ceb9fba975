// A burst of connection failures while a stage handles a record, against real LocalStack (a relay in front of it
// goes down: connects are refused and calls in flight are cut), on queues with the topology's own visibility
// timeouts (a rollout message hidden for 90 minutes after each receive). The stage is the shared batch handler on
// the AWS adapters, as on Lambda and in the local worker: the record is retried inside its invocation and handled
// on its first receive; a failure that outlasts those retries gives the message back for GIVE_BACK seconds, not 90
// minutes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sqsClient } from '#shared/adapters/aws/clients';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { functionEnvironment } from '#shared/operator/local-worker';
import { GIVE_BACK, RECORD_RETRY, sqsBatchHandler } from '#shared/pipeline/batch-handler';
import type { Log } from '#shared/ports/log';
import type { Queue } from '#shared/ports/queue';
import { EventSourceMapping } from '#shared/runtime/event-source-mapping';
import { QUEUES } from '#shared/topology';
import { Scenario, until } from './support/harness.ts';
import { assertLocalStackUp, localstack } from './support/localstack.ts';
import { Outage } from './support/outage.ts';

let s: Scenario;
let outage: Outage;
const mappings: EventSourceMapping[] = [];
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create('topology');
  outage = await Outage.start(localstack().endpoint);
});
afterAll(async () => {
  for (const m of mappings) await m.stop();
  await outage?.close();
  await s?.close();
});

/** The rollout stage's context on the AWS adapters, every call through the relay; warnings kept. */
function stageThroughRelay() {
  const warnings: string[] = [];
  const log: Log = {
    debug: () => {},
    info: () => {},
    warn: (m) => void warnings.push(m),
    error: (m) => void warnings.push(m),
  };
  const env = {
    ...process.env,
    ...functionEnvironment(s.resources),
    AWS_ENDPOINT_URL: outage.endpoint,
    AWS_REGION: localstack().region,
  };
  return { ctx: awsStageContext('rollout', env, log), warnings };
}

/** Runs `handle` on the rollout queue as its event source mapping would, receiving through `queue`. */
function consume(queue: Queue, handler: ReturnType<typeof sqsBatchHandler>): void {
  const m = new EventSourceMapping({
    name: 'rollout',
    queue,
    handler,
    batchSize: 1,
    maxBatchingWindowSec: 0,
    maxConcurrency: 1,
    waitTimeSec: 1,
    // as the local worker does: a poll cut short on SQS may swallow a message the next test sends
    abortPollsOnStop: false,
  });
  mappings.push(m);
  m.start();
}

describe('a burst of connection failures inside a record', () => {
  it('is retried in the invocation: the record is handled on its first receive, its send made once', async () => {
    // GIVEN the rollout queue's topology timeout (a message received and given back waits this long)
    expect(QUEUES.rollout.visibilityTimeoutSec).toBe(5400);
    const { ctx, warnings } = stageThroughRelay();
    const receives: number[] = [];
    const handler = sqsBatchHandler(ctx, {
      name: 'rollout',
      schema: z.object({ n: z.number() }),
      maxReceiveCount: QUEUES.rollout.maxReceiveCount,
      queue: 'rollout',
      handle: async (m, meta) => {
        receives.push(meta.receiveCount);
        // WHEN the endpoint goes away for 3 s as the record starts (its put and its send then fail: refused)
        if (receives.length === 1) outage.down(3_000);
        await ctx.blobs.put(`runs/t-1/out/${m.n}.json`, '{}');
        await ctx.queues['tool-calls']!.send(JSON.stringify({ n: m.n }));
      },
    });
    consume(
      new SqsQueue(
        sqsClient({ endpoint: outage.endpoint, region: localstack().region }),
        s.resources.queueUrls.rollout,
        'rollout',
      ),
      handler,
    );
    await s.queue('rollout').send(JSON.stringify({ n: 1 }));

    // THEN the record was tried again in the same invocation until the endpoint was back, all on receive 1
    await until(async () => (await s.depth('tool-calls')).visible === 1, 'the record to send its message');
    await s.expectDrained(['rollout']);
    expect(outage.outages).toBe(1);
    expect(receives.length).toBeGreaterThan(1);
    expect(receives.length).toBeLessThanOrEqual(RECORD_RETRY.attempts);
    expect(new Set(receives)).toEqual(new Set([1]));
    expect(warnings).toContain('transient failure; the record is retried in this invocation');
    expect(warnings).not.toContain('record failed; it will be retried');
    expect(await s.blobs.head('runs/t-1/out/1.json')).toBeDefined();
    expect((await s.depth('tool-calls')).visible).toBe(1);
    for (const m of mappings.splice(0)) await m.stop();
  });

  it('outlasting the retries, is given back for GIVE_BACK seconds instead of the 90-minute visibility timeout', async () => {
    // GIVEN S3 unreachable from the stage for longer than its retries (until the message is given back), while
    // its queue answers: the stage's context through the relay, its own queue (the give-back) direct
    const { ctx, warnings } = stageThroughRelay();
    const direct = s.queue('rollout');
    const gaveBack: number[] = [];
    const source = Object.assign(Object.create(direct) as SqsQueue, {
      async changeVisibility(handle: string, sec: number) {
        gaveBack.push(sec);
        await direct.changeVisibility(handle, sec);
        await outage.up();
      },
    });
    const receives: number[] = [];
    const handler = sqsBatchHandler(
      { ...ctx, source },
      {
        name: 'rollout',
        schema: z.object({ n: z.number() }),
        maxReceiveCount: QUEUES.rollout.maxReceiveCount,
        queue: 'rollout',
        handle: async (m, meta) => {
          receives.push(meta.receiveCount);
          if (receives.length === 1) outage.down();
          await ctx.blobs.put(`runs/t-1/out/${m.n}.json`, '{}');
        },
      },
    );
    consume(direct, handler);
    await direct.send(JSON.stringify({ n: 2 }));

    // THEN every retry of the first receive failed, the message was given back for GIVE_BACK.baseSec, and it came
    // back and was handled on its second receive, long before the queue's own 5400 s
    await until(
      () => receives.includes(2),
      'the second receive',
      undefined,
      () => JSON.stringify({ receives, gaveBack, warnings, up: outage.isUp }),
    );
    await s.expectDrained(['rollout']);
    expect(receives).toEqual([...Array(RECORD_RETRY.attempts).fill(1), 2]);
    expect(gaveBack).toEqual([GIVE_BACK.baseSec]);
    expect(await s.blobs.head('runs/t-1/out/2.json')).toBeDefined();
  });
});

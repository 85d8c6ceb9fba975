// Fault tests of the embedded pipeline: each exercises one mechanism (partial batch responses, redelivery,
// put-if-absent trajectories and manifests, the writer's re-send, run-start validation) with the real
// policy engine, tools and rewards, and fails without it.
import { afterEach, describe, expect, it } from 'vitest';
import { DATASET_LAYOUT } from '#shared/data/dataset';
import { encodeParquet } from '#shared/data/parquet';
import { readJson } from '#shared/pipeline/blob-json';
import { createStageHandler } from '#shared/pipeline/stages/handlers';
import { ATTR, type ReceivedMessage } from '#shared/ports/queue';
import type { StageContext } from '#shared/ports/stage-context';
import { toSqsEvent } from '#shared/runtime/sqs-event';
import { RewardRequestSchema } from '#shared/schemas/messages/reward-request';
import { ScoredGroupMessageSchema, ScoredGroupSchema } from '#shared/schemas/scored-group';
import { keys } from '#shared/topology';
import { failFirst, type Injector } from './helpers/faults.ts';
import {
  calculatorRows,
  type Fixture,
  pipelineFixture,
  RUN_ID,
  runJson,
  testConfig,
  until,
} from './helpers/pipeline-fixture.ts';

const fixtures: Fixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.close();
});

async function fixture(opts: Parameters<typeof pipelineFixture>[0] = {}): Promise<Fixture> {
  const f = await pipelineFixture(opts);
  fixtures.push(f);
  return f;
}

const oneTurn = (n: number, over: Record<string, unknown> = {}) =>
  testConfig({
    rollout: { n, temperature: 1.0, max_new_tokens: 12, seed: 3, multi_turn: { max_turns: 1 } },
    trainer: { batch_prompts: 1, max_staleness: 1 },
    ...over,
  });

/** Starts the run and lets rollouts finish, with the reward function not running: its requests pile up. */
async function pendingRewards(f: Fixture, config: Record<string, unknown>, rows: number, expected: number) {
  f.pipeline.start(['run-starter', 'feeder', 'rollout', 'tool-call']);
  await f.upload(config, calculatorRows(rows));
  await until(async () => (await runJson(f))?.status === 'running', 'the run to start');
  await f.publish(0);
  await until(
    async () => (await f.pipeline.queues.queues.reward.depth()).visible === expected,
    `${expected} reward requests`,
  );
}

const scoredGroups = async (f: Fixture) =>
  f.browse('scored-groups').map((m) => ScoredGroupMessageSchema.parse(JSON.parse(m.body)));

async function manifests(f: Fixture) {
  const out: Record<string, unknown> = {};
  for (const info of await f.pipeline.blobs.list(`runs/${RUN_ID}/groups/`)) {
    const g = await readJson(f.pipeline.blobs, info.key, ScoredGroupSchema);
    // Who wrote the manifest depends on timing; the content is what must match.
    if (g) out[g.value.groupId] = { ...g.value, completedBy: undefined };
  }
  return out;
}

describe('fault tests (embedded runtime)', () => {
  it('a poison message in a batch of ten: nine handled once, the bad one dead-lettered with its reason', async () => {
    const f = await fixture({
      settings: { reward: { batchSize: 10, maxBatchingWindowSec: 5, maxConcurrency: 1 } },
    });
    await pendingRewards(f, oneTurn(9), 1, 9);
    await f.pipeline.queues.queues.reward.send('{"schemaVersion": 1, "trajectory": {"sampleIndex": "nine"}}');
    f.pipeline.start(['reward']);
    await until(async () => (await scoredGroups(f)).length === 1, 'the group message');
    await until(() => f.pipeline.queues.queues.reward.size === 0, 'the reward queue to drain');
    const stats = f.pipeline.runtime.mappings.reward!.stats;
    expect(stats).toMatchObject({ invocations: 1, recordsSucceeded: 10, recordsFailed: 0, handlerErrors: 0 });
    const stored = await f.pipeline.blobs.list(keys.trajectoryPrefix(RUN_ID, 'e0-p0'));
    expect(stored).toHaveLength(9);
    const dead = f.browse('reward', true);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.body).toContain('"nine"');
    expect(dead[0]!.attributes[ATTR.deadLetterReason]).toMatch(/^BadMessageError: reward: invalid message/);
  });

  it.each([
    ['reward', 'a reward handler crashes after storing its trajectory (before completing the group)'],
    ['rollout', 'a rollout handler crashes after sampling (before sending to reward)'],
  ] as const)('%s: %s; the redelivery ends in the same state as a clean run', async (fn, _what) => {
    const config = testConfig({ trainer: { batch_prompts: 2, max_staleness: 0 } });
    const clean = await fixture();
    clean.pipeline.start();
    await clean.upload(config, calculatorRows(2));
    await until(async () => (await runJson(clean))?.status === 'running', 'the clean run to start');
    await clean.publish(0);
    await until(async () => (await scoredGroups(clean)).length === 2, 'the clean run');

    let injected: Injector | undefined;
    const faulty = await fixture({
      wrapContext: <C extends StageContext>(name: string, ctx: C): C => {
        if (name !== fn) return ctx;
        if (fn === 'reward') {
          const blobs = failFirst(ctx.blobs, 'listKeys');
          injected = blobs;
          return { ...ctx, blobs };
        }
        const reward = failFirst(ctx.queues.reward!, 'sendBatch');
        injected = reward;
        return { ...ctx, queues: { ...ctx.queues, reward } };
      },
    });
    faulty.pipeline.start();
    await faulty.upload(config, calculatorRows(2));
    await until(async () => (await runJson(faulty))?.status === 'running', 'the faulty run to start');
    await faulty.publish(0);
    await until(async () => (await scoredGroups(faulty)).length === 2, 'the faulty run');
    expect(injected?.fired).toBe(1);
    expect(faulty.pipeline.runtime.mappings[fn]!.stats.recordsFailed).toBe(1);
    expect(await manifests(faulty)).toEqual(await manifests(clean));
  });

  it('the same message delivered twice: one trajectory, one contribution to its group, one group message', async () => {
    const f = await fixture();
    await pendingRewards(f, oneTurn(4, { trainer: { batch_prompts: 2, max_staleness: 0 } }), 2, 8);
    const originals = f.browse('reward');
    f.pipeline.start(['reward']);
    await until(async () => (await scoredGroups(f)).length === 2, 'both groups');
    const trajectoryKeys = await f.pipeline.blobs.list(`runs/${RUN_ID}/trajectories/`);
    const before = await manifests(f);

    // Every message again, and one sample again with different content (as a re-rollout would produce).
    for (const m of originals) await f.pipeline.queues.queues.reward.send(m.body);
    const altered = RewardRequestSchema.parse(JSON.parse(originals[0]!.body));
    const lp = altered.trajectory.tokens.behaviorLogprobs;
    lp[lp.length - 1] = -0.123;
    await f.pipeline.queues.queues.reward.send(JSON.stringify(altered));
    await until(() => f.pipeline.queues.queues.reward.size === 0, 'the duplicates to be handled');

    expect((await scoredGroups(f)).map((g) => g.groupId).sort()).toEqual(['e0-p0', 'e0-p1']);
    expect(await f.pipeline.blobs.list(`runs/${RUN_ID}/trajectories/`)).toEqual(trajectoryKeys); // same etags
    expect(await manifests(f)).toEqual(before);
  });

  it('G reward handlers racing on one group: exactly one group message', async () => {
    const G = 8;
    const f = await fixture();
    await pendingRewards(f, oneTurn(G), 1, G);
    const received: ReceivedMessage[] = await f.pipeline.queues.queues.reward.receive({ maxMessages: 10 });
    expect(received).toHaveLength(G);
    const handler = createStageHandler('reward', {
      ...f.pipeline.context('reward'),
      resources: f.pipeline.resources,
    });
    const responses = await Promise.all(
      received.map((m) => handler(toSqsEvent(f.pipeline.queues.queues.reward, [m]))),
    );
    expect(responses.flatMap((r) => r.batchItemFailures)).toEqual([]);
    const groups = await scoredGroups(f);
    expect(groups).toHaveLength(1);
    const manifest = await readJson(f.pipeline.blobs, groups[0]!.manifestKey, ScoredGroupSchema);
    expect(manifest?.value.trajectories.map((t) => t.sampleIndex)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('a crash between writing the group manifest and sending it: the redelivery sends it', async () => {
    let injected: Injector | undefined;
    const f = await fixture({
      wrapContext: <C extends StageContext>(name: string, ctx: C): C => {
        if (name !== 'reward') return ctx;
        const scored = failFirst(ctx.queues['scored-groups']!, 'sendBatch');
        injected = scored;
        return { ...ctx, queues: { ...ctx.queues, 'scored-groups': scored } };
      },
    });
    f.pipeline.start();
    await f.upload(oneTurn(4), calculatorRows(1));
    await until(async () => (await runJson(f))?.status === 'running', 'the run to start');
    await f.publish(0);
    await until(async () => (await scoredGroups(f)).length === 1, 'the group message after the redelivery');
    expect(injected?.fired).toBe(1);
    await until(() => f.pipeline.queues.queues.reward.size === 0, 'the reward queue to drain');
    expect(await scoredGroups(f)).toHaveLength(1);
    expect(f.pipeline.runtime.mappings.reward!.stats.recordsFailed).toBe(1);
  });

  it.each([
    [
      'a row that breaks the schema',
      () =>
        encodeParquet(
          [
            { data_source: 'calc', prompt: [{ role: 'user', content: 'ok' }], extra_info: { index: 0 } },
            {
              data_source: 'calc',
              prompt: [{ role: 'assistant', content: 'no question' }],
              extra_info: { index: 1 },
            },
          ],
          DATASET_LAYOUT,
        ),
      /invalid dataset:\n.*train\.parquet: row 1: prompt\[0\]\.role: the prompt ends with an assistant message/,
    ],
    [
      'a file that is not Parquet',
      () => new TextEncoder().encode('id,question\n1,2+2\n'),
      /cannot read .* as Parquet/,
    ],
  ])(
    'a bad dataset (%s): the run fails with its reason and nothing is rolled out',
    async (_, data, reason) => {
      const f = await fixture();
      f.pipeline.start();
      await f.upload(testConfig(), data());
      await until(async () => (await runJson(f))?.status === 'failed', 'the run to fail');
      const run = await runJson(f);
      expect(run?.reason).toMatch(reason);
      expect(f.submitted).toEqual([]);
      await until(() => f.pipeline.queues.queues['run-events'].size === 0, 'the run event to be handled');
      expect(f.browse('run-events', true)).toEqual([]);
      await f.publish(0); // even a policy appearing starts nothing for a failed run
      await new Promise((r) => setTimeout(r, 500));
      expect(f.pipeline.queues.queues.rollout.size).toBe(0);
    },
  );
});

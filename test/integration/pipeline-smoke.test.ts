// The embedded pipeline end to end without the learner: upload -> run-starter -> (policy v0) -> feeder ->
// rollout -> tool-call -> reward -> one scored-group message per group.
import { afterEach, describe, expect, it } from 'vitest';
import { readJson } from '#shared/pipeline/blob-json';
import { TrajectoryWireSchema } from '#shared/schemas/messages/token-arrays';
import { RunStatusSchema } from '#shared/schemas/run-status';
import { ScoredGroupMessageSchema, ScoredGroupSchema } from '#shared/schemas/scored-group';
import { keys } from '#shared/topology';
import { type Fixture, pipelineFixture, RUN_ID, until } from './helpers/pipeline-fixture.ts';

let fx: Fixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

describe('embedded pipeline (stand-in learner)', () => {
  // The test's own limit is above its waits' (50 s, 120 s) so a stall fails naming what it waited for; the work
  // itself takes seconds.
  it('turns every planned group into exactly one scored-group message', async () => {
    fx = await pipelineFixture();
    fx.pipeline.start();
    await fx.upload();
    const runJson = () => readJson(fx!.pipeline.blobs, keys.runJson(RUN_ID), RunStatusSchema);
    await until(async () => (await runJson())?.value.status === 'running', 'the run to start');
    expect(fx.submitted).toHaveLength(1);
    const run = await runJson();
    expect(run?.value).toMatchObject({ status: 'running', totals: { groupsPlanned: 4, trainPrompts: 4 } });
    await fx.publish(0);
    await until(() => fx!.browse('scored-groups').length >= 4, 'four scored groups');
    const msgs = fx.browse('scored-groups').map((m) => ScoredGroupMessageSchema.parse(JSON.parse(m.body)));
    expect(msgs.map((m) => m.groupId).sort()).toEqual(['e0-p0', 'e0-p1', 'e0-p2', 'e0-p3']);
    const group = await readJson(fx.pipeline.blobs, msgs[0]!.manifestKey, ScoredGroupSchema);
    expect(group?.value.trajectories.map((t) => t.sampleIndex)).toEqual([0, 1, 2, 3]);
    for (const t of group!.value.trajectories) {
      expect(t.lossMask.length).toBe(t.tokenIds.length);
      expect(t.policyVersions.filter((v) => v >= 0).every((v) => v === 0)).toBe(true);
      expect(Object.keys(t.rewardComponents)).toContain('retool/correct');
    }
    expect(fx.browse('rollout', true)).toEqual([]);
    expect(fx.browse('reward', true)).toEqual([]);
  });

  it('builds each manifest from the trajectories its reward stage stored, reading none of them back', async () => {
    fx = await pipelineFixture();
    // Every read the stages make, by key (one process: the reward stage that stores a group's G trajectories has
    // them in memory when the last one completes the group).
    const blobs = fx.pipeline.blobs;
    const reads: string[] = [];
    for (const m of ['get', 'read', 'head'] as const) {
      const f = (blobs[m] as (k: string) => Promise<unknown>).bind(blobs);
      (blobs as unknown as Record<string, (k: string) => Promise<unknown>>)[m] = (k: string) => {
        reads.push(k);
        return f(k);
      };
    }
    fx.pipeline.start();
    await fx.upload();
    await until(
      async () => (await readJson(blobs, keys.runJson(RUN_ID), RunStatusSchema))?.value.status === 'running',
      'the run to start',
    );
    await fx.publish(0);
    await until(() => fx!.browse('scored-groups').length >= 4, 'four scored groups');
    // No trajectory read back, no manifest looked for: first receives build the manifest when the listing is full.
    expect(reads.filter((k) => k.includes('/trajectories/') || k.includes('/groups/'))).toEqual([]);
    // And each manifest holds exactly the stored trajectories.
    for (const m of fx
      .browse('scored-groups')
      .map((x) => ScoredGroupMessageSchema.parse(JSON.parse(x.body)))) {
      const group = (await readJson(blobs, m.manifestKey, ScoredGroupSchema))!.value;
      for (const t of group.trajectories) {
        const stored = await readJson(
          blobs,
          keys.trajectory(RUN_ID, m.groupId, t.sampleIndex),
          TrajectoryWireSchema,
        );
        expect(t).toEqual(stored?.value);
      }
    }
  });
});

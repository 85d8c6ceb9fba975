// The embedded pipeline end to end without the learner: upload -> run-starter -> (policy v0) -> feeder ->
// rollout -> tool-call -> reward -> one scored-group message per group.
import { afterEach, describe, expect, it } from 'vitest';
import { readJson } from '#shared/pipeline/blob-json';
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
});

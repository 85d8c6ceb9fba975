// The feeder's flow control: at most batch_prompts x (1 + max_staleness) train groups in flight, the walk
// continued from its stored position, validation groups every eval_every versions and for the final one,
// and the run completed once the learner is done and its final version is evaluated.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { encodeDataset } from '#shared/data/dataset';
import { putJson, readJson } from '#shared/pipeline/blob-json';
import { feedRun } from '#shared/pipeline/feeder';
import { silentLog } from '#shared/pipeline/log';
import { resolveRunConfig } from '#shared/pipeline/run-config';
import { RunResources } from '#shared/pipeline/run-resources';
import { RunConfigSchema } from '#shared/schemas/config/run';
import { RolloutStartSchema } from '#shared/schemas/messages/rollout-request';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';

const rows = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    data_source: 'calc',
    prompt: [{ role: 'user' as const, content: `${tag} ${i}` }],
    reward_model: { style: 'rule', ground_truth: String(i) },
    extra_info: { index: i },
  }));

async function setup() {
  const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-feed-')));
  const rollout = new EmbeddedQueue({ name: 'rollout', visibilityTimeoutSec: 30 });
  const ctx = {
    blobs,
    queues: { rollout },
    log: silentLog,
    now: () => new Date(),
    resources: new RunResources(blobs, { scratchDir: tmpdir() }),
  };
  const config = resolveRunConfig(
    RunConfigSchema.parse({
      model: { path: 'tiny' },
      data: { train: 'train.parquet', val: 'val.parquet', shuffle: false },
      rollout: { n: 4 },
      trainer: { batch_prompts: 2, max_staleness: 1, eval_every: 2 },
    }),
    'r',
  );
  await blobs.put('runs/r/input/train.parquet', encodeDataset(rows(10, 'train')));
  await blobs.put('runs/r/input/val.parquet', encodeDataset(rows(3, 'val')));
  const run: RunStatus = {
    schemaVersion: 1,
    runId: 'r',
    status: 'running',
    reason: null,
    createdAt: '',
    updatedAt: '',
    config,
    input: {
      config: keys.config('r'),
      train: ['runs/r/input/train.parquet'],
      val: ['runs/r/input/val.parquet'],
    },
    totals: { groupsPlanned: 10, trainPrompts: 10, valPrompts: 3, epochs: 1 },
    learner: { submittedAt: null, jobId: null },
    completedAt: null,
  };
  await putJson(blobs, keys.runJson('r'), run);
  const latest = (v: number) =>
    putJson(blobs, keys.policyLatest('r'), {
      version: v,
      prefix: keys.policyVersion('r', v),
      sha256: 'a'.repeat(64),
    });
  const learner = (consumed: number, dropped: number, version: number, done = false) =>
    putJson(blobs, keys.learnerState('r'), {
      step: consumed / 2,
      policyVersion: version,
      groupsConsumed: consumed,
      groupsDropped: dropped,
      rewardMean: 0,
      done,
      updatedAt: '',
    });
  const drain = async () => {
    const out = [];
    for (;;) {
      const got = await rollout.receive({ maxMessages: 10 });
      if (!got.length) return out;
      for (const m of got) {
        out.push(RolloutStartSchema.parse(JSON.parse(m.body)));
        await rollout.delete(m.receiptHandle);
      }
    }
  };
  return { ctx, latest, learner, drain, blobs };
}

describe('feeder', () => {
  it('keeps batch_prompts x (1 + max_staleness) groups in flight and walks on from its stored position', async () => {
    const { ctx, latest, learner, drain } = await setup();
    await feedRun(ctx, 'r'); // nothing published yet
    expect(await drain()).toEqual([]);

    await latest(0);
    await feedRun(ctx, 'r');
    const first = await drain();
    // cap = 2 x (1 + 1) = 4 train groups, plus validation of v0 (eval_every 2): 3 val groups pinned to v0
    expect(first.filter((m) => m.group.split === 'train').map((m) => m.group.groupId)).toEqual([
      'e0-p0',
      'e0-p1',
      'e0-p2',
      'e0-p3',
    ]);
    expect(
      first.filter((m) => m.group.split === 'val').map((m) => [m.group.groupId, m.group.policyVersion]),
    ).toEqual([
      ['val-v0-p0', 0],
      ['val-v0-p1', 0],
      ['val-v0-p2', 0],
    ]);
    expect(first[0]!.group).toMatchObject({ groupSize: 4, dataSource: 'calc', policyVersion: null });

    await feedRun(ctx, 'r'); // the same event again: nothing new
    expect(await drain()).toEqual([]);

    await learner(2, 1, 1); // 3 of 4 settled: in flight 1, so 3 more
    await latest(1); // odd version: no validation
    await feedRun(ctx, 'r');
    expect((await drain()).map((m) => m.group.groupId)).toEqual(['e0-p4', 'e0-p5', 'e0-p6']);

    await learner(6, 1, 2); // in flight 0 -> cap 4, but only 3 of the 10 planned are left
    await latest(2);
    await feedRun(ctx, 'r');
    expect((await drain()).map((m) => m.group.groupId)).toEqual([
      'e0-p7',
      'e0-p8',
      'e0-p9',
      'val-v2-p0',
      'val-v2-p1',
      'val-v2-p2',
    ]);
  });

  it('when the learner is done: validates its final version, then completes the run', async () => {
    const { ctx, latest, learner, drain, blobs } = await setup();
    await latest(5);
    await learner(10, 0, 5, true);
    await feedRun(ctx, 'r');
    expect((await drain()).map((m) => m.group.groupId)).toEqual(['val-v5-p0', 'val-v5-p1', 'val-v5-p2']);
    expect((await readJson(blobs, keys.runJson('r'), RunStatusSchema))?.value.status).toBe('running');

    await putJson(blobs, keys.evalSummary('r', 5), { done: true }); // what the reward stage writes last
    await feedRun(ctx, 'r');
    expect(await drain()).toEqual([]);
    const run = (await readJson(blobs, keys.runJson('r'), RunStatusSchema))?.value;
    expect(run?.status).toBe('completed');
    expect(run?.completedAt).not.toBeNull();
  });
});

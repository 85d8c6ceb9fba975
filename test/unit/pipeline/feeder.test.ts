// The feeder's flow control: at most batch_prompts x (1 + max_staleness) train groups in flight, the walk
// continued from its stored position, validation groups every eval_every versions and for the final one,
// and the run completed once the learner is done and its final version is evaluated; a curriculum stage's own
// group size, seed and cap; and data.prompt_type applied to the rows (run and stage templates, idempotent on
// rows already written with it, and a failed run when it cannot be applied).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { encodeDataset } from '#shared/data/dataset';
import { putJson, readJson } from '#shared/pipeline/blob-json';
import { groupSeed } from '#shared/pipeline/plan';
import { resolveRunConfig } from '#shared/pipeline/run-config';
import { RunResources } from '#shared/pipeline/run-resources';
import { feedRun } from '#shared/pipeline/stages/feeder';
import { silentLog } from '#shared/ports/log';
import { RunConfigSchema } from '#shared/schemas/config/run';
import { RolloutStartSchema } from '#shared/schemas/messages/rollout-request';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';

const rows = (n: number, tag: string, extra: Record<string, unknown> = {}) =>
  Array.from({ length: n }, (_, i) => ({
    data_source: 'calc',
    prompt: [{ role: 'user' as const, content: `${tag} ${i}` }],
    reward_model: { style: 'rule', ground_truth: String(i) },
    extra_info: { index: i, ...extra },
  }));

interface Setup {
  /** Merged over the base config below (top-level keys replace). */
  config?: Record<string, unknown>;
  files?: Record<string, Uint8Array | string>;
  trainKeys?: string[];
  groupsPlanned?: number;
}

async function setup(o: Setup = {}) {
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
      ...o.config,
    }),
    'r',
  );
  const files = {
    'train.parquet': encodeDataset(rows(10, 'train')),
    'val.parquet': encodeDataset(rows(3, 'val')),
    ...o.files,
  };
  for (const [name, data] of Object.entries(files)) await blobs.put(`runs/r/input/${name}`, data);
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
      train: (o.trainKeys ?? ['train.parquet']).map((k) => `runs/r/input/${k}`),
      val: ['runs/r/input/val.parquet'],
    },
    totals: { groupsPlanned: o.groupsPlanned ?? 10, trainPrompts: 10, valPrompts: 3, epochs: 1 },
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
  const status = async () => (await readJson(blobs, keys.runJson('r'), RunStatusSchema))?.value;
  return { ctx, latest, learner, drain, blobs, status };
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

describe('feeder: validation sampling (rollout.val_kwargs)', () => {
  it('greedy validation has one sample per prompt; sampled validation has val_kwargs.n', async () => {
    const greedy = await setup();
    await greedy.latest(0);
    await feedRun(greedy.ctx, 'r');
    const val = (await greedy.drain()).filter((m) => m.group.split === 'val');
    expect(val.map((m) => m.group.groupSize)).toEqual([1, 1, 1]);

    const sampled = await setup({
      config: { rollout: { n: 4, val_kwargs: { temperature: 0.7, n: 3 } } },
    });
    await sampled.latest(0);
    await feedRun(sampled.ctx, 'r');
    const all = await sampled.drain();
    expect(all.filter((m) => m.group.split === 'val').map((m) => m.group.groupSize)).toEqual([3, 3, 3]);
    expect(all.filter((m) => m.group.split === 'train').map((m) => m.group.groupSize)).toEqual([4, 4, 4, 4]);
  });

  it('refuses greedy validation with n > 1 (n identical samples), naming the field', () => {
    expect(() =>
      RunConfigSchema.parse({
        model: { path: 'tiny' },
        data: { train: 'a.parquet' },
        rollout: { val_kwargs: { n: 4 } },
      }),
    ).toThrow(/greedy validation \(temperature 0\) gives n identical samples/);
  });
});

describe('feeder: run completion', () => {
  it('waits for every validated version, not only the final one, before completing the run', async () => {
    const { ctx, latest, learner, drain, blobs, status } = await setup();
    // v0 and v2 validated earlier; the learner then published v3..v5 and finished before the next pass.
    await putJson(blobs, keys.feederState('r'), {
      schemaVersion: 1,
      issued: 10,
      evalVersions: [0, 2],
      updatedAt: 'before',
    });
    for (const v of [0, 2]) await putJson(blobs, keys.evalSummary('r', v), { done: true });
    await latest(5);
    await learner(10, 0, 5, true);
    await feedRun(ctx, 'r');
    // eval_every 2: v4 (missed between passes) and the final v5, in one pass
    expect(new Set((await drain()).map((m) => m.group.groupId.slice(0, 6)))).toEqual(
      new Set(['val-v4', 'val-v5']),
    );

    await putJson(blobs, keys.evalSummary('r', 5), { done: true }); // v5's groups scored first
    await feedRun(ctx, 'r');
    expect((await status())?.status).toBe('running'); // v4's are still in flight
    await putJson(blobs, keys.evalSummary('r', 4), { done: true });
    await feedRun(ctx, 'r');
    expect((await status())?.status).toBe('completed');
  });
});

describe('feeder: a run the learner stopped', () => {
  it("fails with the learner's reason, sending nothing (no final validation of a run that cannot learn)", async () => {
    const { ctx, latest, drain, blobs, status } = await setup();
    await latest(0);
    const reason =
      'no group had different rewards in 10 batches in a row (20 groups, algorithm.max_num_gen_batches=10): ...';
    await putJson(blobs, keys.learnerState('r'), {
      step: 0,
      policyVersion: 0,
      groupsConsumed: 0,
      groupsDropped: 20,
      rewardMean: null,
      done: true,
      failed: reason,
      updatedAt: '',
    });
    await feedRun(ctx, 'r');
    expect(await drain()).toEqual([]);
    expect(await status()).toMatchObject({ status: 'failed', reason });
  });
});

describe('feeder: curriculum stages', () => {
  const stages = [
    {
      name: 'format',
      data: { train: 'format.parquet' },
      overrides: { rollout: { n: 2, seed: 7 }, trainer: { batch_prompts: 3 } },
    },
    { name: 'full', data: { train: 'train.parquet' } },
  ];
  const curriculum = () =>
    setup({
      config: { stages, trainer: { batch_prompts: 2, max_staleness: 1, eval_every: 0 } },
      files: { 'format.parquet': encodeDataset(rows(6, 'format')) },
      trainKeys: ['format.parquet', 'train.parquet'],
      groupsPlanned: 16,
    });

  it("a stage's rollout.n and rollout.seed set its groups' size and seed; the next stage has the run's", async () => {
    const { ctx, latest, learner, drain } = await curriculum();
    await latest(0);
    await feedRun(ctx, 'r');
    const format = await drain();
    expect(format.map((m) => [m.group.groupId, m.group.stage, m.group.groupSize])).toEqual([
      ['s0-e0-p0', 'format', 2],
      ['s0-e0-p1', 'format', 2],
      ['s0-e0-p2', 'format', 2],
      ['s0-e0-p3', 'format', 2],
      ['s0-e0-p4', 'format', 2],
      ['s0-e0-p5', 'format', 2],
    ]);
    // The format stage's batch_prompts 3 sets the cap: 3 x (1 + 1) = 6 in flight, where the run's 2 gives 4.
    expect(format[0]!.seed).toBe(groupSeed(7, 's0-e0-p0'));

    await learner(6, 0, 1); // the format stage consumed: the full stage's cap is the run's 2 x (1 + 1) = 4
    await latest(1);
    await feedRun(ctx, 'r');
    const full = await drain();
    expect(full.map((m) => [m.group.groupId, m.group.stage, m.group.groupSize])).toEqual([
      ['s1-e0-p0', 'full', 4],
      ['s1-e0-p1', 'full', 4],
      ['s1-e0-p2', 'full', 4],
      ['s1-e0-p3', 'full', 4],
    ]);
    expect(full[0]!.seed).toBe(groupSeed(0, 's1-e0-p0'));
  });
});

describe('feeder: data.prompt_type', () => {
  const MINE = 'name: mine\nsystem: "Use {{tool_names}}."\nuser: "Q: {{question}}"\n';

  it("wraps train rows with the stage's template and validation rows with the run's, once", async () => {
    const { ctx, latest, drain } = await setup({
      config: {
        data: { train: 'train.parquet', val: 'val.parquet', shuffle: false, prompt_type: 'toolcall' },
        // A path relative to the config; on a remote store the inputs are flat, found by the file's name.
        stages: [{ name: 'only', data: { train: 'train.parquet', prompt_type: 'prompts/mine.yaml' } }],
        trainer: { batch_prompts: 1, max_staleness: 0, eval_every: 1 },
      },
      files: {
        'mine.yaml': MINE,
        // val row 0 was converted with --prompt-type toolcall already; rows 1-2 were not
        'val.parquet': encodeDataset([
          ...rows(1, 'done', { prompt_type: 'toolcall' }).map((r) => ({
            ...r,
            prompt: [{ role: 'system' as const, content: 'converted' }, ...r.prompt],
          })),
          ...rows(3, 'val').slice(1),
        ]),
      },
    });
    await latest(0);
    await feedRun(ctx, 'r');
    const sent = await drain();
    const [train, ...val] = sent;
    expect(train!.group.groupId).toBe('s0-e0-p0');
    expect(train!.row).toMatchObject({
      prompt: [
        { role: 'system', content: 'Use .' }, // the row brings no tools
        { role: 'user', content: 'Q: train 0' },
      ],
      extra_info: { index: 0, prompt_type: 'mine' },
    });
    expect(val.map((m) => m.row.extra_info)).toEqual([
      { index: 0, prompt_type: 'toolcall' },
      { index: 1, prompt_type: 'toolcall' },
      { index: 2, prompt_type: 'toolcall' },
    ]);
    // Already written with toolcall: left exactly as stored (not wrapped twice).
    expect((val[0]!.row as { prompt: unknown }).prompt).toEqual([
      { role: 'system', content: 'converted' },
      { role: 'user', content: 'done 0' },
    ]);
    const wrapped = (val[1]!.row as { prompt: { role: string; content: string }[] }).prompt;
    expect(wrapped.map((m) => m.role)).toEqual(['system', 'user']);
    expect(wrapped[0]!.content).toMatch(/^You are a helpful assistant with access to tools/);
    expect(wrapped[1]!.content).toBe('val 1');
  });

  it('fails the run, naming the row, when a row was written with another template; nothing is sent', async () => {
    const { ctx, latest, drain, status } = await setup({
      config: { data: { train: 'train.parquet', shuffle: false, prompt_type: 'toolcall' } },
      files: { 'train.parquet': encodeDataset(rows(4, 'train', { prompt_type: 'retool' })) },
    });
    await latest(0);
    await feedRun(ctx, 'r');
    expect(await drain()).toEqual([]);
    const run = await status();
    expect(run?.status).toBe('failed');
    expect(run?.reason).toMatch(
      /^row 0 of runs\/r\/input\/train\.parquet was written with prompt_type retool \(extra_info\.prompt_type\) and data\.prompt_type asks for toolcall; a row takes one template/,
    );
  });

  it('fails the run with a clear reason when the template cannot be loaded', async () => {
    const { ctx, latest, drain, status } = await setup({
      config: { data: { train: 'train.parquet', shuffle: false, prompt_type: 'nope.yaml' } },
    });
    await latest(0);
    await feedRun(ctx, 'r');
    expect(await drain()).toEqual([]);
    expect((await status())?.reason).toMatch(
      /^data\.prompt_type nope\.yaml: prompt template file .*nope\.yaml does not exist/,
    );
  });
});

describe('feeder: trainer.deterministic', () => {
  it('pins batch t to the version after batch t - max_staleness, and waits for it', async () => {
    const { ctx, latest, drain, blobs } = await setup({
      config: { trainer: { batch_prompts: 2, max_staleness: 1, deterministic: true } },
    });
    const state = (settled: number, versions: number[], consumed: number) =>
      putJson(blobs, keys.learnerState('r'), {
        step: settled,
        policyVersion: versions.at(-1),
        groupsConsumed: consumed,
        groupsDropped: 0,
        rewardMean: 0,
        done: false,
        updatedAt: '',
        batches: { settled, versions },
      });
    const train = async () =>
      (await drain())
        .filter((m) => m.group.split === 'train')
        .map((m) => [m.group.position, m.group.policyVersion]);

    await latest(0);
    await feedRun(ctx, 'r');
    // Batches 0 and 1 (positions 0-3, the cap of 4) are both sampled by v0: batch 1 by the version after batch 0.
    expect(await train()).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
    // Batch 0's two groups are counted (say both were dropped on arrival), but batch 0 has not been settled: the
    // version that samples batch 2 is not known yet, so nothing more goes out although two slots are free.
    await state(0, [0], 2);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([]);
    // Batch 0 settled with v1 out: batch 2 (positions 4, 5) sampled by v1.
    await state(1, [0, 1], 2);
    await latest(1);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([
      [4, 1],
      [5, 1],
    ]);
    // The learner may be a batch further on when the feeder runs: batch 3 still gets the version after batch 2,
    // not the newest.
    await state(3, [0, 1, 2, 3], 6);
    await latest(3);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([
      [6, 2],
      [7, 2],
      [8, 3],
      [9, 3],
    ]);
  });

  it('issues no train group past the batches max_steps will train; a batch settled without a step lets one more in', async () => {
    const { ctx, latest, drain, blobs } = await setup({
      config: { trainer: { batch_prompts: 2, max_staleness: 1, deterministic: true, max_steps: 2 } },
    });
    const state = (settled: number, step: number, versions: number[]) =>
      putJson(blobs, keys.learnerState('r'), {
        step,
        policyVersion: versions.at(-1),
        groupsConsumed: 2 * step,
        groupsDropped: 2 * (settled - step),
        rewardMean: 0,
        done: false,
        updatedAt: '',
        batches: { settled, versions },
      });
    const train = async () =>
      (await drain()).filter((m) => m.group.split === 'train').map((m) => m.group.position);

    await latest(0);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([0, 1, 2, 3]);
    // Batch 0 trained (step 1): the cap has two slots free and the walk has 10 groups, but two steps take batches 0
    // and 1 only.
    await state(1, 1, [0, 1]);
    await latest(1);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([]);
    // Batch 1's groups were all dropped: it settles without a step, so step 2 needs batch 2.
    await state(2, 1, [0, 1, 1]);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([4, 5]);
    await state(3, 2, [0, 1, 1, 2]);
    await latest(2);
    await feedRun(ctx, 'r');
    expect(await train()).toEqual([]);
  });

  it('refuses settings that would make batches depend on arrival, naming the field', () => {
    const bad = RunConfigSchema.safeParse({
      model: { path: 'tiny' },
      data: { train: 't.parquet' },
      algorithm: { refill_filtered_groups: true },
      trainer: { deterministic: true },
      stages: [{ name: 's', data: { train: 't.parquet' }, overrides: { trainer: { batch_prompts: 4 } } }],
    });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(['algorithm.refill_filtered_groups', 'stages.0.overrides.trainer.batch_prompts']);
  });
});

// Liveness: a reward that throws for one prompt dead-letters that group's messages. The group is recorded as
// dropped with its reason, the (real) learner counts it and the run ends by itself; past
// `trainer.max_dead_letter_fraction` the run fails with a readable reason instead. (Before, the group's messages
// sat in the dead-letter queue and the run waited for them forever.)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { encodeDataset } from '#shared/data/dataset';
import { readJson } from '#shared/pipeline/blob-json';
import { listDeadLetters } from '#shared/pipeline/dead-letters';
import { EvalSummarySchema } from '#shared/pipeline/eval';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { keys } from '#shared/topology';
import {
  calculatorRows,
  type Fixture,
  pipelineFixture,
  RUN_ID,
  runJson,
  testConfig,
  until,
} from './helpers/pipeline-fixture.ts';
import { quickstartRows, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const run = tinyRun('dead-letters');
afterAll(() => run.close());

/**
 * A user reward whose judge fails on one question, every time (a transient error: retried, then dead-lettered).
 * One file per test: Node caches a module by its path, and both runs share this process.
 */
function flakyJudge(file: string, rows: readonly DatasetRow[], failOn: number): void {
  const truth = JSON.stringify(rows[failOn]!.reward_model.ground_truth);
  writeFileSync(
    join(run.dir, file),
    `export const rewards = {\n  judge: (input) => {\n    if (JSON.stringify(input.groundTruth) === ${JSON.stringify(truth)})\n` +
      "      throw new Error('the judge cannot score this question');\n    return input.turns.length > 0 ? 0.5 : 0;\n  },\n};\n",
  );
}

const config = (file: string, over: Record<string, unknown>) =>
  tinyConfig({ reward: { modules: [file], functions: [{ name: 'judge' }] }, ...over });

describe('dead-lettered groups (embedded, real learner)', () => {
  it('drops the group with its reason, counts it, and the run completes', async () => {
    // GIVEN 3 questions, the judge failing on the second, and a limit that tolerates one group in three
    const rows = (await quickstartRows('train')).slice(0, 3);
    run.dataset('train.parquet', rows);
    flakyJudge('judge-a.ts', rows, 1);

    // WHEN the run trains
    const result = await run.run(config('judge-a.ts', { trainer: { max_dead_letter_fraction: 0.5 } }));

    // THEN it completes by itself: two groups trained, the third dropped as dead-lettered
    expect(result.status, result.reason ?? '').toBe('completed');
    expect(result.learner).toMatchObject({ groupsConsumed: 2, groupsDropped: 1, done: true });
    const records = await listDeadLetters(new FolderBlobStore(join(run.dir, 'work')), result.runId);
    // both samples' reward messages, after the queue's five attempts each
    expect(records.map((r) => [r.groupId, r.stage, r.split, r.receiveCount])).toEqual([
      ['e0-p1', 'reward', 'train', 5],
      ['e0-p1', 'reward', 'train', 5],
    ]);
    expect(records[0]!.reason).toBe(
      'Error: reward judge failed: the judge cannot score this question (after 5 attempts)',
    );
    expect(stepMetrics(result).reduce((n, m) => n + (m.groups ?? 0), 0)).toBe(2);
  });
});

describe('the dead-letter limit (embedded pipeline, stand-in learner)', () => {
  let f: Fixture | undefined;
  const opened: Fixture[] = [];
  const open = async () => {
    const x = await pipelineFixture();
    opened.push(x);
    return x;
  };
  afterAll(async () => {
    for (const x of opened) await x.close();
  });

  it('fails the run once past max_dead_letter_fraction, naming the stage and the reason', async () => {
    // GIVEN 2 questions, a judge that fails on the first, and the default limit (5%: no group of two may fail)
    f = await open();
    const rows = calculatorRows(2);
    const truth = JSON.stringify(rows[0]!.reward_model!.ground_truth);
    await f.pipeline.blobs.put(
      `${keys.inputPrefix(RUN_ID)}judge.ts`,
      `export const rewards = { judge: (input) => { if (JSON.stringify(input.groundTruth) === ${JSON.stringify(truth)}) throw new Error('the judge cannot score this question'); return 0.5; } };\n`,
    );
    f.pipeline.start();
    await f.upload(testConfig({ reward: { modules: ['judge.ts'], functions: [{ name: 'judge' }] } }), rows);
    await until(async () => (await runJson(f!))?.status === 'running', 'the run to start');

    // WHEN its groups are rolled out and scored
    await f.publish(0);

    // THEN the first group's reward messages are dead-lettered (counted, not received) and the run fails
    await until(async () => (await runJson(f!))?.status === 'failed', 'the run to fail');
    const run = await runJson(f);
    expect(run?.reason).toMatch(
      /^1 of 2 planned groups were dead-lettered, more than trainer\.max_dead_letter_fraction = 0\.05 allows \(0\):\nreward: \d message/,
    );
    expect(run?.reason).toContain(
      'Error: reward judge failed: the judge cannot score this question (after 5 attempts)',
    );
    expect((await f.pipeline.queues.dlqs.reward.depth()).visible).toBeGreaterThanOrEqual(1);
    const records = await listDeadLetters(f.pipeline.blobs, RUN_ID);
    expect(new Set(records.map((r) => `${r.groupId} ${r.stage}`))).toEqual(new Set(['e0-p0 reward']));
  });

  it("a dead-lettered validation group: the version's summary completes without it, counting it dropped", async () => {
    // GIVEN 2 train and 2 validation questions, a judge that fails on the second validation question only,
    // and validation of every version
    f = await open();
    const [t0, t1, v0, v1] = calculatorRows(4);
    const truth = JSON.stringify(v1!.reward_model!.ground_truth);
    await f.pipeline.blobs.put(
      `${keys.inputPrefix(RUN_ID)}judge.ts`,
      `export const rewards = { judge: (input) => { if (JSON.stringify(input.groundTruth) === ${JSON.stringify(truth)}) throw new Error('the judge cannot score this question'); return 0.5; } };\n`,
    );
    await f.pipeline.blobs.put(`${keys.inputPrefix(RUN_ID)}val.parquet`, encodeDataset([v0!, v1!]));
    f.pipeline.start();
    await f.upload(
      testConfig({
        data: { train: 'train.parquet', val: 'val.parquet', max_prompt_length: 512, shuffle: false },
        reward: { modules: ['judge.ts'], functions: [{ name: 'judge' }] },
        trainer: { batch_prompts: 2, max_staleness: 1, epochs: 1, eval_every: 1 },
      }),
      [t0!, t1!],
    );
    await until(async () => (await runJson(f!))?.status === 'running', 'the run to start');

    // WHEN v0 is out and its validation groups are rolled out and scored
    await f.publish(0);

    // THEN v0's summary is written with the one scored prompt and the dead-lettered one counted as dropped, and
    // the run is not failed (validation groups are outside max_dead_letter_fraction)
    const summary = async () =>
      (await readJson(f!.pipeline.blobs, keys.evalSummary(RUN_ID, 0), EvalSummarySchema))?.value;
    await until(async () => (await summary()) !== undefined, 'the v0 validation summary');
    expect(await summary()).toMatchObject({
      policyVersion: 0,
      prompts: 1,
      droppedPrompts: 1,
      trajectories: 1, // rollout.val_kwargs.n = 1 sample per validation prompt
    });
    const records = await listDeadLetters(f.pipeline.blobs, RUN_ID);
    expect(new Set(records.map((r) => `${r.groupId} ${r.split} ${r.stage}`))).toEqual(
      new Set(['val-v0-p1 val reward']),
    );
    expect((await runJson(f))?.status).toBe('running');
  });
});

// A reward module that never answers (a judge service that hangs) does not hold the run: each call is cut off
// after the reward's `timeout`, the record is retried and dead-lettered with that reason, its group is counted
// as dropped, and past the limit the run fails saying why.
import { afterAll, describe, expect, it } from 'vitest';
import { listDeadLetters } from '#shared/pipeline/dead-letters';
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

describe('a reward module that hangs (embedded pipeline, stand-in learner)', () => {
  let f: Fixture | undefined;
  afterAll(async () => {
    await f?.close();
  });

  it('times out, is dead-lettered with the reason, and the run fails instead of waiting forever', async () => {
    // GIVEN 2 questions, a judge that never answers on the first, a 0.5 s timeout and the default limit (5%)
    f = await pipelineFixture();
    const rows = calculatorRows(2);
    const truth = JSON.stringify(rows[0]!.reward_model!.ground_truth);
    await f.pipeline.blobs.put(
      `${keys.inputPrefix(RUN_ID)}slow-judge.ts`,
      `export const rewards = { judge: (input) => JSON.stringify(input.groundTruth) === ${JSON.stringify(truth)} ? new Promise(() => {}) : 0.5 };\n`,
    );
    f.pipeline.start();
    await f.upload(
      testConfig({ reward: { modules: ['slow-judge.ts'], functions: [{ name: 'judge', timeout: 0.5 }] } }),
      rows,
    );
    await until(async () => (await runJson(f!))?.status === 'running', 'the run to start');

    // WHEN its groups are rolled out and scored
    await f.publish(0);

    // THEN the hanging group's reward messages are dead-lettered with the timeout as their reason, and the run fails
    await until(async () => (await runJson(f!))?.status === 'failed', 'the run to fail');
    expect((await runJson(f))?.reason).toContain(
      'Error: reward judge failed: reward judge from slow-judge.ts did not finish within 0.5 s (after 5 attempts)',
    );
    const records = await listDeadLetters(f.pipeline.blobs, RUN_ID);
    expect(new Set(records.map((r) => `${r.groupId} ${r.stage} ${r.receiveCount}`))).toEqual(
      new Set(['e0-p0 reward 5']),
    );
  });
});

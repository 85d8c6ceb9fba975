// A duplicate upload event on LocalStack starts one run: the dataset's S3 notification delivered three times
// (redelivery) and the dataset uploaded twice (a second ObjectCreated) still give one learner and one run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/topology';
import { Scenario } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';
import { writeRun } from './support/run-fixture.ts';

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

describe('duplicate upload events (LocalStack)', () => {
  it('start one run and one learner', async () => {
    // GIVEN a worker, and a run (2 prompts, 2 samples each) whose dataset is uploaded
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const run = await writeRun(s.dir, { prompts: 2, groupSize: 2, batchPrompts: 1 });
    const runId = await s.submit(run);
    const datasetKey = `${keys.inputPrefix(runId)}train.parquet`;

    // WHEN the same notification arrives twice more and the dataset is uploaded again
    const notification = JSON.stringify({
      Records: [
        {
          eventVersion: '2.1',
          eventSource: 'aws:s3',
          awsRegion: 'us-east-1',
          eventTime: new Date().toISOString(),
          eventName: 'ObjectCreated:Put',
          s3: { bucket: { name: s.resources.bucket }, object: { key: datasetKey } },
        },
      ],
    });
    await s.queue('run-events').send(notification);
    await s.queue('run-events').send(notification);
    await s.blobs.put(datasetKey, (await s.blobs.get(datasetKey))!);

    // THEN the run completes once: one learner was started, each group scored once
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    const runStarts = worker.events().filter((e) => e.worker === 'invoke' && e.function === 'run-starter');
    // the submit's notification, the two duplicates and the re-upload all reached the run-starter
    expect(runStarts.reduce((n, e) => n + (e.records as number), 0)).toBeGreaterThanOrEqual(4);
    expect(s.learnerStarts().filter((e) => e.runId === runId)).toHaveLength(1);
    expect([...(await s.groups(runId)).keys()].sort()).toEqual(['e0-p0', 'e0-p1']);
    const versions = await s.versionCounts(`${keys.runPrefix(runId)}trajectories/`);
    expect([...versions.values()]).toEqual([1, 1, 1, 1]);
    const ckpt = await s.lastCheckpoint(runId);
    expect([...ckpt.consumedGroupIds, ...ckpt.droppedGroupIds].sort()).toEqual(['e0-p0', 'e0-p1']);
    await s.expectNoDeadLetters(['run-events']);
  });
});

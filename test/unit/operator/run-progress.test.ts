// What `toolrl status` says of one run beyond its run.json: the warm start while it runs, the groups it will train
// under max_steps, and its own messages per queue, summed from the stages' and the learner's tallies.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { parseRunConfig } from '#shared/config/resolve';
import { readRunQueueCounts } from '#shared/operator/run-progress';
import { formatRunReport, type QueueReport, reportOf } from '#shared/operator/run-report';
import { runIdOfMessage } from '#shared/pipeline/batch-handler';
import { putJson } from '#shared/pipeline/blob-json';
import { QueueTally } from '#shared/pipeline/queue-tally';
import { resolveRunConfig } from '#shared/pipeline/run-config';
import { silentLog } from '#shared/ports/log';
import { keys, QUEUES, type QueueName } from '#shared/topology';
import { bareRunStatus } from '../../helpers/run-status.ts';

const QUICKSTART = readFileSync(new URL('../../../examples/quickstart/run.yaml', import.meta.url), 'utf8');

/** The quickstart's run (512 groups planned, batch_prompts 8) with trainer.max_steps=2, as `submit ... trainer.max_steps=2` makes it. */
async function quickstartRun() {
  const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-status-')));
  const config = resolveRunConfig(parseRunConfig(QUICKSTART, 'run.yaml'), 'qs-1');
  const run = {
    ...bareRunStatus('qs-1', 'running', 512),
    config: { ...config, trainer: { ...config.trainer, max_steps: 2 } },
  };
  await putJson(blobs, keys.runJson('qs-1'), run);
  // the environment's queues: another run's 172 rollout messages are in them too
  const env = Object.fromEntries(
    (Object.keys(QUEUES) as QueueName[]).map((q) => [
      q,
      { visible: 0, inFlight: q === 'rollout' ? 172 : 0, delayed: 0, deadLetters: 0 },
    ]),
  ) as Record<QueueName, QueueReport>;
  const report = async () => ({
    ...(await reportOf(
      blobs,
      'qs-1',
      Promise.resolve(env),
      { env: 'dev', bucket: 'b', runDir: null },
      async () => '',
    )),
    runQueues: await readRunQueueCounts(blobs, 'qs-1'),
  });
  return { blobs, report };
}

describe('the run a message belongs to (what the tallies count it for)', () => {
  const fixture = (name: string) =>
    JSON.parse(readFileSync(new URL(`../../fixtures/events/${name}`, import.meta.url), 'utf8'));
  it('reads it from every message kind of the pipeline', () => {
    // S3 notifications name a key under the run's folder (the record's body is the notification)
    const policyEvent = JSON.parse(fixture('policy-event-latest.json').Records[0].body);
    expect(runIdOfMessage(policyEvent)).toBe(policyEvent.Records[0].s3.object.key.split('/')[1]);
    expect(runIdOfMessage({ schemaVersion: 1, kind: 'input-check', runId: 'r-1', check: 1 })).toBe('r-1');
    // a rollout start carries its group; a continuation, a tool call and a reward request their trajectory's
    expect(runIdOfMessage({ kind: 'start', group: { runId: 'r-2', groupId: 'e0-p1' } })).toBe('r-2');
    expect(
      runIdOfMessage({ kind: 'continue', trajectory: { group: { runId: 'r-3' }, sampleIndex: 0 } }),
    ).toBe('r-3');
    expect(runIdOfMessage({ runId: 'r-4', groupId: 'e0-p1', manifestKey: 'k' })).toBe('r-4');
    expect(runIdOfMessage('not an object')).toBeUndefined();
    expect(runIdOfMessage({ Service: 'Amazon S3', Event: 's3:TestEvent' })).toBeUndefined();
  });
});

describe('toolrl status of one run', () => {
  it('shows the warm start while it runs, and the steps and groups planned under max_steps', async () => {
    const { blobs, report } = await quickstartRun();
    // submitted, the learner loading its model: neither a warm start nor a step to show yet
    expect(formatRunReport(await report())).toMatch(/^learner {3}starting, then 2 steps of RL$/m);
    await putJson(blobs, keys.learnerWarmStart('qs-1'), {
      stage: null,
      step: 312,
      steps: 700,
      loss: 0.4123,
      done: false,
      updatedAt: '2025-01-01T00:00:00.000Z',
    });
    const r = await report();
    expect(r.progress).toMatchObject({ maxSteps: 2, stepsPlanned: 2, groupsToTrain: 16 });
    expect(formatRunReport(r)).toMatch(
      /^learner {3}warm start 312\/700 steps, loss 0\.412, then 2 steps of RL$/m,
    );

    // once the learner has a step: its counts, out of the 16 groups max_steps allows of the 512 planned
    await putJson(blobs, keys.learnerState('qs-1'), {
      step: 1,
      policyVersion: 1,
      groupsConsumed: 8,
      groupsDropped: 0,
      rewardMean: 0.5,
      done: false,
      updatedAt: '2025-01-01T00:00:00.000Z',
    });
    await putJson(blobs, keys.learnerWarmStart('qs-1'), {
      stage: null,
      step: 700,
      steps: 700,
      loss: 0.1,
      done: true,
      updatedAt: '2025-01-01T00:00:00.000Z',
    });
    expect(formatRunReport(await report())).toMatch(
      /^learner {3}step 1\/2 {2}policy v1 {2}reward 0\.500 {2}groups 8\/16 trained, 0 dropped \(max_steps 2; 512 planned\)$/m,
    );
  });

  it("counts the run's own messages per queue from the tallies, not the environment's", async () => {
    const { blobs, report } = await quickstartRun();
    expect((await report()).runQueues).toBeNull();
    // GIVEN a worker that sent 10 rollout messages for the run and handled 7, and 4 reward ones it handled all of
    const worker = new QueueTally(blobs, { intervalMs: 0, log: silentLog }, 'worker');
    await worker.within('qs-1', async () => {
      for (let i = 0; i < 10; i++) worker.sent('rollout');
      for (let i = 0; i < 4; i++) worker.sent('reward');
      worker.sent('scored-groups', 3);
    });
    for (let i = 0; i < 7; i++) worker.handled('qs-1', 'rollout');
    for (let i = 0; i < 4; i++) worker.handled('qs-1', 'reward');
    // and another run's messages counted by the same worker
    await worker.within('other', async () => worker.sent('rollout', 50));
    await worker.settle();
    // and a learner that took 2 of the run's 3 scored groups off the queue
    await putJson(blobs, keys.queueTally('qs-1', 'learner-abc'), {
      schemaVersion: 1,
      runId: 'qs-1',
      writer: 'learner-abc',
      updatedAt: '2025-01-01T00:00:00.000Z',
      queues: { 'scored-groups': { sent: 0, handled: 2 } },
    });
    // THEN the run's messages in each queue are sent minus handled; notification queues are not counted
    const r = await report();
    expect(r.runQueues).toEqual({
      'run-events': null,
      'policy-events': null,
      rollout: 3,
      'tool-calls': 0,
      reward: 0,
      'scored-groups': 1,
    });
    const text = formatRunReport(r);
    expect(text).toMatch(/^ {10}rollout +3 +0 +172 +0 +0$/m);
    expect(text).toMatch(/^ {10}run-events +- +0 +0 +0 +0$/m);
  });
});

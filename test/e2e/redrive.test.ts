// `toolrl status` and `toolrl redrive` against LocalStack's S3 and SQS: a run's dead letters are shown by stage and
// reason; a redrive sends back only that run's messages (the dead-letter queue is the environment's, shared with
// other runs) and moves their records to redriven/. No worker runs, so what went back stays visible to look at
// (LocalStack's message browser: nothing is received to look). The whole flow with a worker and the learner is
// test/integration/redrive.test.ts, on the embedded runtime.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '#shared/operator/run-report';
import { putJson } from '#shared/pipeline/blob-json';
import { listDeadLetters } from '#shared/pipeline/dead-letters';
import { ATTR } from '#shared/ports/queue';
import { keys } from '#shared/topology';
import { bareRunStatus } from '../helpers/run-status.ts';
import { Scenario } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

const group = (runId: string, groupId: string) => ({
  runId,
  groupId,
  promptId: groupId.replace(/^e\d+-/, ''),
  epoch: 0,
  stage: null,
  split: 'train',
  dataSource: 'calc',
  groupSize: 2,
  policyVersion: null,
});

const REASON = 'Error: reward judge failed: the judge service is down (after 5 attempts)';

describe('toolrl status and toolrl redrive (LocalStack)', () => {
  it("shows a run's dead letters by stage and reason, and sends back only that run's messages", async () => {
    // GIVEN two running runs whose reward messages were dead-lettered, each with its record, as the reward stage
    // leaves them
    for (const runId of ['r-mine', 'r-other']) {
      await putJson(s.blobs, keys.runJson(runId), bareRunStatus(runId, 'running'));
      for (const sampleIndex of [0, 1]) {
        const body = JSON.stringify({ trajectory: { group: group(runId, 'e0-p1'), sampleIndex } });
        const { messageId } = await s.queue('reward', true).send(body, {
          attributes: { [ATTR.deadLetterReason]: REASON, [ATTR.receiveCount]: '5' },
        });
        await putJson(s.blobs, keys.deadLetter(runId, 'e0-p1', 'reward', messageId), {
          schemaVersion: 1,
          runId,
          groupId: 'e0-p1',
          split: 'train',
          stage: 'reward',
          sampleIndex,
          messageId,
          reason: REASON,
          receiveCount: 5,
          deadLetteredAt: '2025-01-01T00:00:00.000Z',
        });
      }
    }

    // WHEN the operator looks at one run
    const json = await s.toolrl(['status', 'r-mine', '--env', s.env, '--json']);

    // THEN its dead letters are there by stage and reason, beside the environment's dead-letter count
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as RunReport;
    expect(report.deadLetters).toEqual({
      groups: { train: 1, val: 0 },
      stages: { reward: { messages: 2, groups: 1, reasons: [{ reason: REASON, count: 2 }] } },
    });
    expect(report.queues.reward.deadLetters).toBe(4); // the environment's: both runs'
    const text = await s.toolrl(['status', 'r-mine', '--env', s.env]);
    expect(text.stdout).toContain(`reward: 2 messages of 1 group: ${REASON} (x2)`);
    expect(text.stdout).toContain(`(after a fix: toolrl redrive r-mine --env ${s.env})`);

    // WHEN the run's reward dead letters are redriven
    const redrive = await s.toolrl(['redrive', 'r-mine', '--env', s.env, '--stage', 'reward']);

    // THEN its two messages are back on the reward queue, without the dead-letter attributes; the other run's
    // stay in the dead-letter queue with theirs; only its records moved to redriven/
    expect(redrive.code, redrive.stderr).toBe(0);
    expect(redrive.stdout).toBe('run r-mine: sent back reward 2; 2 dead-letter records moved to redriven/\n');
    const back = await s.browse('reward');
    expect(back.map((m) => JSON.parse(m.body).trajectory.group.runId)).toEqual(['r-mine', 'r-mine']);
    expect(back.every((m) => m.attributes[ATTR.deadLetterReason] === undefined)).toBe(true);
    const still = await s.browse('reward', true);
    expect(still.map((m) => JSON.parse(m.body).trajectory.group.runId)).toEqual(['r-other', 'r-other']);
    expect(still.every((m) => m.attributes[ATTR.deadLetterReason] === REASON)).toBe(true);
    expect(await listDeadLetters(s.blobs, 'r-mine')).toEqual([]);
    expect(await s.blobs.listKeys(keys.redriven('r-mine'))).toHaveLength(2);
    expect(await listDeadLetters(s.blobs, 'r-other')).toHaveLength(2);
    const after = JSON.parse((await s.toolrl(['status', 'r-mine', '--env', s.env, '--json'])).stdout);
    expect(after).toMatchObject({ redriven: 2, deadLetters: { groups: { train: 0, val: 0 } } });

    // and a run that has ended is refused: nothing would train its groups
    await putJson(s.blobs, keys.runJson('r-other'), bareRunStatus('r-other', 'failed'));
    const late = await s.toolrl(['redrive', 'r-other', '--env', s.env]);
    expect(late.code).toBe(2);
    expect(late.stderr).toMatch(/run r-other is failed: nothing would train its groups any more/);
  });
});

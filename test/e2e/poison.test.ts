// A poison message on LocalStack: it reaches its queue's dead-letter queue with the reason it was refused,
// and nothing else is lost (the run it was mixed into completes with every group).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '#shared/adapters/aws/clients';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import { listDeadLetters } from '#shared/pipeline/dead-letters';
import { ATTR } from '#shared/ports/queue';
import { HANG_MS } from '../helpers/hang.ts';
import { Scenario, until } from './support/harness.ts';
import { assertLocalStackUp, localstack } from './support/localstack.ts';
import { writeRun } from './support/run-fixture.ts';

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

describe('poison messages (LocalStack)', () => {
  it('dead-letters each with its reason and loses nothing of the run around them', async () => {
    // GIVEN a run in progress (4 prompts, 2 samples each)
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const runId = await s.submit(await writeRun(s.dir, { prompts: 4, groupSize: 2, batchPrompts: 2 }));
    await until(
      async () => (await s.runStatus(runId))?.status === 'running',
      'the run to start',
      HANG_MS,
      () => s.tails(),
    );

    // WHEN poison arrives on three stages' queues in the middle of it: not JSON, the wrong shape, and a claim
    // check whose object does not exist
    const sqs = sqsClient(localstack());
    const send = (q: 'rollout' | 'tool-calls' | 'reward', body: string) =>
      new SqsQueue(sqs, s.resources.queueUrls[q], q).send(body);
    await send('rollout', 'this is not JSON {');
    await send('reward', JSON.stringify({ schemaVersion: 1, kind: 'score', nothing: 'useful' }));
    const missing = `runs/${runId}/messages/${'0'.repeat(64)}.json`;
    await send(
      'tool-calls',
      JSON.stringify({ schemaVersion: 1, claimCheck: { key: missing, sha256: '0'.repeat(64), bytes: 10 } }),
    );

    // THEN each lands in its own dead-letter queue, once, with a reason naming the problem (counted with
    // GetQueueAttributes and read with LocalStack's browser: a receive here would change what it looks at)
    const deadLetters = async (q: 'rollout' | 'tool-calls' | 'reward') => s.browse(q, true);
    const dlqCount = async (q: 'rollout' | 'tool-calls' | 'reward') => (await s.depth(q, true)).visible;
    await until(
      async () =>
        (await dlqCount('rollout')) === 1 &&
        (await dlqCount('reward')) === 1 &&
        (await dlqCount('tool-calls')) === 1,
      'the three poison messages in their dead-letter queues',
      HANG_MS,
      () => s.tails(),
    );
    const [rollout] = await deadLetters('rollout');
    expect(rollout!.body).toBe('this is not JSON {');
    expect(rollout!.attributes[ATTR.deadLetterReason]).toMatch(/message body is not JSON/);
    expect(rollout!.attributes[ATTR.sourceQueue]).toMatch(/toolrl-e2e[0-9a-f]+-rollout$/);
    const [reward] = await deadLetters('reward');
    expect(reward!.attributes[ATTR.deadLetterReason]).toMatch(/reward: invalid message/);
    const [toolCall] = await deadLetters('tool-calls');
    expect(toolCall!.attributes[ATTR.deadLetterReason]).toContain(`claim check ${missing}: object not found`);
    // refused at once, not after maxReceiveCount attempts
    for (const m of [rollout, reward, toolCall]) expect(m!.attributes[ATTR.receiveCount]).toBe('1');

    // and the run completes with all four groups scored and trained, and no other dead letter
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    expect([...(await s.groups(runId)).keys()].sort()).toEqual(['e0-p0', 'e0-p1', 'e0-p2', 'e0-p3']);
    const ckpt = await s.lastCheckpoint(runId);
    expect([...ckpt.consumedGroupIds, ...ckpt.droppedGroupIds].sort()).toEqual([
      'e0-p0',
      'e0-p1',
      'e0-p2',
      'e0-p3',
    ]);
    await s.expectNoDeadLetters(['run-events', 'policy-events', 'scored-groups']);
    for (const q of ['rollout', 'tool-calls', 'reward'] as const)
      expect(await deadLetters(q)).toHaveLength(1);
    // the other tests' "no dead letters" check sees these, with their reasons
    await expect(s.expectNoDeadLetters(['rollout'])).rejects.toThrow(
      /rollout-dlq: .*message body is not JSON/,
    );
    // poison names no group, so no group of the run was recorded as dropped for it
    expect(await listDeadLetters(s.blobs, runId)).toEqual([]);
  });
});

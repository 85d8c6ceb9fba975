// A message above SQS's size limit on LocalStack: the stages put its payload in S3 under its sha256 and send
// the key (claim check); the run completes as if nothing were special.
import { createHash } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsClient } from '#shared/adapters/aws/clients';
import { keys } from '#shared/topology';
import { Scenario } from './support/harness.ts';
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

/** SQS's limit on a message body (LocalStack enforces it too). */
const SQS_LIMIT = 1024 * 1024;

describe('claim check (LocalStack)', () => {
  it('carries a payload above the SQS limit through S3 and completes the run', async () => {
    // GIVEN a row whose extra_info makes every message about it 1.1 MB (the feeder copies the row into the
    // rollout request), which SQS itself refuses
    const bulky = 'x'.repeat(1_100_000);
    await expect(
      sqsClient(localstack()).send(
        new SendMessageCommand({
          QueueUrl: s.resources.queueUrls.rollout,
          MessageBody: JSON.stringify({ bulky }),
        }),
      ),
    ).rejects.toThrow(/shorter than 1048576 bytes/);
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const run = await writeRun(s.dir, {
      prompts: 2,
      groupSize: 2,
      batchPrompts: 1,
      extraInfo: { context: bulky },
    });

    // WHEN it runs
    const runId = await s.submit(run);
    const final = await s.waitForEnd(runId);

    // THEN it completes with both groups, and the large payloads went through content-addressed objects
    expect(final.status, final.reason ?? '').toBe('completed');
    expect([...(await s.groups(runId)).keys()].sort()).toEqual(['e0-p0', 'e0-p1']);
    const checks = await s.blobs.list(`${keys.runPrefix(runId)}messages/`);
    expect(checks.length).toBeGreaterThan(0);
    for (const c of checks) {
      expect(c.size).toBeGreaterThan(SQS_LIMIT);
      const body = (await s.blobs.get(c.key))!;
      expect(c.key).toBe(keys.claimCheck(runId, createHash('sha256').update(body).digest('hex')));
      expect(Buffer.from(body).toString('utf8')).toContain(bulky);
    }
    await s.expectNoDeadLetters(['rollout', 'tool-calls', 'reward']);
  });
});

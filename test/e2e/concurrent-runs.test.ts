// Two runs at once in one environment (LocalStack), with a worker and a learner per run: both runs' scored groups
// go through the environment's one scored-groups queue, and each learner forwards the other run's messages instead
// of handing them back, so neither run's groups are dead-lettered. Both complete with exactly their own groups.
// About 5 minutes on a loaded 2-core machine, so it runs only with TOOLRL_SLOW_TESTS=1; the forwarding itself is
// tested on every run by gpu-worker/tests/test_drivers_sqs.py (two learners, one LocalStack queue).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scenario } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';
import { writeRun } from './support/run-fixture.ts';

const slow = process.env['TOOLRL_SLOW_TESTS'] === '1';
let s: Scenario | undefined;
beforeAll(async () => {
  if (!slow) return;
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

const sc = (): Scenario => {
  if (!s) throw new Error('no scenario');
  return s;
};

describe.runIf(slow)('concurrent runs (LocalStack)', () => {
  it('share the queues and both complete with exactly their own groups, nothing dead-lettered', async () => {
    const s = sc();
    // GIVEN one worker and two runs submitted together
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const files = await Promise.all(
      ['a', 'b'].map((n) => {
        mkdirSync(join(s.dir, n));
        return writeRun(join(s.dir, n), { prompts: 3, groupSize: 2, batchPrompts: 1 });
      }),
    );
    const runIds = await Promise.all(files.map((f) => s.submit(f)));
    expect(new Set(runIds).size).toBe(2);

    // WHEN both train at once
    const finals = await Promise.all(runIds.map((r) => s.waitForEnd(r)));

    // THEN both complete, each learner settled exactly its own three groups, and nothing was dead-lettered
    for (const [i, runId] of runIds.entries()) {
      expect(finals[i]!.status, finals[i]!.reason ?? s.tails()).toBe('completed');
      const ckpt = await s.lastCheckpoint(runId);
      expect([...ckpt.consumedGroupIds, ...ckpt.droppedGroupIds].sort()).toEqual(['e0-p0', 'e0-p1', 'e0-p2']);
    }
    await s.expectNoDeadLetters(['reward', 'scored-groups']);
  });
});

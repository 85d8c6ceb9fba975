// The learner killed mid-run on LocalStack (SIGKILL, as a lost spot host): the Batch-like job runner starts it
// again, it resumes from its last complete checkpoint, and no group is trained twice or lost.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJson } from '#shared/pipeline/blob-json';
import { LearnerStateSchema } from '#shared/schemas/learner-stdio';
import { keys } from '#shared/topology';
import { HANG_MS } from '../helpers/hang.ts';
import { Scenario, until } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';
import { writeRun } from './support/run-fixture.ts';

/** The learner's stdout lines this test reads (`python -m toolrl_learner sqs`, LearnerOutputLine). */
interface LearnerLine {
  type: string;
  resumedFromStep?: number | null;
  step?: number;
  groupIds?: string[];
}

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

describe('the learner killed mid-run (LocalStack)', () => {
  it('is restarted, resumes from its last checkpoint and trains every group exactly once', async () => {
    // GIVEN a run of 8 prompts, 2 groups per step (4 steps), a checkpoint after every step. The groups leased to
    // the killed learner come back only when their lease runs out, by which time the restarted learner may be
    // steps ahead; a max_staleness above the run's length keeps them trainable, so "none lost" is exact here
    // (with the default they may be dropped as stale and counted, as gpu-worker/tests/test_drivers.py checks).
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const runId = await s.submit(
      await writeRun(s.dir, { prompts: 8, groupSize: 2, batchPrompts: 2, maxStaleness: 8 }),
    );

    // WHEN the learner is killed after its first committed step
    await until(
      async () => {
        const st = (await readJson(s.blobs, keys.learnerState(runId), LearnerStateSchema))?.value;
        return st !== undefined && st.step >= 1 && !st.done;
      },
      'the learner to commit a step',
      HANG_MS,
      () => s.tails(),
    );
    const attempt1 = await worker.waitFor(
      (e) => e.worker === 'learner-started' && e.attempt === 1,
      'the learner',
    );
    process.kill(attempt1.pid as number, 'SIGKILL');

    // THEN the runner sees a lost host and starts attempt 2, which resumes
    const exit = await worker.waitFor(
      (e) => e.worker === 'learner-exited' && e.attempt === 1,
      'the learner to exit',
    );
    expect(exit).toMatchObject({ signal: 'SIGKILL', retry: true });
    await worker.waitFor((e) => e.worker === 'learner-started' && e.attempt === 2, 'attempt 2');
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');

    const lines = readFileSync(join(s.dir, 'learners', runId, 'learner.out.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LearnerLine);
    const readyAt = lines.flatMap((l, i) => (l.type === 'ready' ? [i] : []));
    expect(readyAt).toHaveLength(2);
    expect(lines[readyAt[0]!]!.resumedFromStep).toBeNull();
    // Attempt 2 resumed from attempt 1's last complete checkpoint: no older than the last step it reported
    // committed, no newer than the last step it trained (a kill between a checkpoint and its `committed` line
    // leaves that checkpoint complete but unreported).
    const first = lines.slice(0, readyAt[1]);
    const lastCommitted = first.filter((l) => l.type === 'committed').at(-1)?.step ?? 0;
    const lastTrained = first.filter((l) => l.type === 'step').at(-1)?.step ?? 0;
    expect(lastCommitted).toBeGreaterThanOrEqual(1);
    const resumed = lines[readyAt[1]!]!.resumedFromStep!;
    expect(resumed).toBeGreaterThanOrEqual(lastCommitted);
    expect(resumed).toBeLessThanOrEqual(lastTrained);
    // No group was committed twice across the two attempts (a group trained but not committed by attempt 1
    // is redelivered and trained again by attempt 2: that is the at-least-once half of the contract).
    const committed = lines.filter((l) => l.type === 'committed').flatMap((l) => l.groupIds ?? []);
    expect(new Set(committed).size).toBe(committed.length);

    // Every group settled exactly once in the final checkpoint: none trained twice, none lost.
    const ckpt = await s.lastCheckpoint(runId);
    const all = Array.from({ length: 8 }, (_, i) => `e0-p${i}`).sort();
    expect(new Set(ckpt.consumedGroupIds).size).toBe(ckpt.consumedGroupIds.length);
    expect([...ckpt.consumedGroupIds].sort()).toEqual(all);
    expect(ckpt.droppedGroupIds).toEqual([]);
    expect(ckpt.step).toBe(4);
    expect(committed.sort()).toEqual(all);
    const state = (await readJson(s.blobs, keys.learnerState(runId), LearnerStateSchema))!.value;
    expect(state).toMatchObject({ step: 4, groupsConsumed: 8, groupsDropped: 0, done: true });
    await s.expectDrained(['scored-groups']);
    await s.expectNoDeadLetters(['scored-groups']);
  });
});

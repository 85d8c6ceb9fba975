// A local-runtime worker killed mid-batch on LocalStack: the messages it held come back after their
// visibility timeout, a second worker handles them, and every effect happens once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/topology';
import { HANG_MS } from '../helpers/hang.ts';
import { E2E_VISIBILITY_SEC, Scenario, until } from './support/harness.ts';
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

describe('a worker killed mid-batch (LocalStack)', () => {
  it('has its messages redelivered to another worker and handled once', async () => {
    // GIVEN worker A running a run of 6 prompts, 4 samples each
    const a = s.startWorker('A');
    await a.waitFor((e) => e.worker === 'ready', 'worker A to start');
    const runId = await s.submit(await writeRun(s.dir, { prompts: 6, groupSize: 4, batchPrompts: 2 }));

    // WHEN A is killed (SIGKILL: no cleanup) while it holds rollout messages
    const rollout = s.queue('rollout');
    let held = 0;
    await until(
      async () => {
        held = (await rollout.depth()).inFlight;
        return held > 0;
      },
      'worker A to hold a rollout message',
      HANG_MS,
      () => s.tails(),
    );
    await a.kill('SIGKILL');
    expect(a.child.signalCode).toBe('SIGKILL');
    // the held messages are invisible until their visibility timeout runs out
    expect((await rollout.depth()).inFlight).toBeGreaterThan(0);
    const b = s.startWorker('B');
    await b.waitFor((e) => e.worker === 'ready', 'worker B to start');

    // THEN B handles them once they reappear, and the run completes with every effect exactly once
    await b.waitFor(
      (e) => e.worker === 'invoke' && e.function === 'rollout',
      'B to run a rollout',
      (E2E_VISIBILITY_SEC.rollout! + 120) * 1000,
    );
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    const groups = await s.groups(runId);
    expect([...groups.keys()].sort()).toEqual(['e0-p0', 'e0-p1', 'e0-p2', 'e0-p3', 'e0-p4', 'e0-p5']);
    for (const g of groups.values())
      expect(g.trajectories.map((t) => t.sampleIndex).sort()).toEqual([0, 1, 2, 3]);
    // Versioning is on: a second write of a trajectory or a group manifest would show as a second version.
    const trajectories = await s.versionCounts(`${keys.runPrefix(runId)}trajectories/`);
    expect(trajectories.size).toBe(24);
    expect(new Set(trajectories.values())).toEqual(new Set([1]));
    const manifests = await s.versionCounts(`${keys.runPrefix(runId)}groups/`);
    expect([...manifests.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    const ckpt = await s.lastCheckpoint(runId);
    expect(new Set(ckpt.consumedGroupIds).size).toBe(ckpt.consumedGroupIds.length);
    expect([...ckpt.consumedGroupIds, ...ckpt.droppedGroupIds].sort()).toEqual([...groups.keys()].sort());
    await s.expectNoDeadLetters(['rollout', 'tool-calls', 'reward', 'scored-groups']);
  });
});

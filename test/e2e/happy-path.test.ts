// The whole run on LocalStack: `toolrl submit` -> S3 notification -> run-starter -> feeder -> rollout ->
// tool-call -> reward -> scored groups -> the learner (SQS driver, tiny model, a real process) -> policy
// versions published -> later trajectories sampled by newer versions -> the run completes and
// `toolrl status` says so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJson } from '#shared/pipeline/blob-json';
import { ScoredGroupSchema } from '#shared/schemas/scored-group';
import { keys, QUEUES, type QueueName } from '#shared/topology';
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

describe('LocalStack end to end', () => {
  it('trains a submitted run to completion through S3, SQS, the five stages and the learner', async () => {
    // GIVEN a worker running the stages on a fresh environment, and a run of 8 prompts, 4 samples each,
    // 2 groups per learner step (so 4 steps, policy v1..v4), after 40 SFT steps on the quickstart's
    // demonstrations (about a minute on 2 cores) so that the tiny model calls the calculator
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const run = await writeRun(s.dir, {
      prompts: 8,
      groupSize: 4,
      batchPrompts: 2,
      sftSteps: 40,
      sftBatchSize: 4,
      maxNewTokens: 48,
    });

    // WHEN it is submitted
    const submit = await s.toolrl([
      'submit',
      '--env',
      s.env,
      '--config',
      run.configPath,
      '--dataset',
      run.datasetPath,
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    const runId = submit.stdout.trim();
    expect(runId).toMatch(/^e2e-\d{8}-\d{6}-[0-9a-f]{4}$/);
    expect(submit.stderr).toMatch(new RegExp(`uploaded runs/${runId}/input/config.yaml`));

    // THEN the run completes
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    expect(final.totals.groupsPlanned).toBe(8);

    // and `toolrl status` says so, with the learner's step and version (4 steps of 2 groups: v4)
    const text = await s.toolrl(['status', runId, '--env', s.env]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^status\s+completed/m);
    expect(text.stdout).toMatch(
      /learner\s+step 4\s+policy v4\s+reward -?\d+\.\d{3}\s+groups 8\/8 trained, 0 dropped/,
    );
    const json = JSON.parse((await s.toolrl(['status', runId, '--env', s.env, '--json'])).stdout);
    expect(json).toMatchObject({
      status: 'completed',
      step: 4,
      policyVersion: 4,
      groupsConsumed: 8,
      groupsDropped: 0,
    });

    // Every policy version the learner published is in the bucket.
    for (const v of [0, 1, 2, 3, 4])
      expect(await s.blobs.head(`${keys.policyVersion(runId, v)}manifest.json`)).toBeDefined();

    // Each group was scored once with all 4 samples; later groups were sampled by newer policies.
    const groups = (await s.blobs.list(`${keys.runPrefix(runId)}groups/`)).filter((b) =>
      b.key.endsWith('.json'),
    );
    expect(groups).toHaveLength(8);
    const versions: number[] = [];
    let toolCalls = 0;
    let continuedAfterTools = 0;
    for (const g of groups) {
      const group = (await readJson(s.blobs, g.key, ScoredGroupSchema))!.value;
      expect(group.trajectories.map((t) => t.sampleIndex).sort()).toEqual([0, 1, 2, 3]);
      for (const t of group.trajectories) {
        versions.push(Math.max(...t.policyVersions));
        toolCalls += t.turns.reduce((n, turn) => n + turn.toolCalls.length, 0);
        const [first, second] = t.turns;
        if (!first?.toolCalls.length || !second) continue;
        // The tool-call stage's results were appended between the two turns and are not trained on.
        expect(second.tokenStart).toBeGreaterThan(first.tokenEnd);
        expect(new Set(t.lossMask.slice(first.tokenEnd, second.tokenStart))).toEqual(new Set([0]));
        continuedAfterTools++;
      }
    }
    expect(Math.min(...versions)).toBe(0);
    expect(Math.max(...versions)).toBeGreaterThanOrEqual(1);
    // The tool-call stage ran, and its results reached the trajectories (rollout continued after them).
    expect(toolCalls).toBeGreaterThan(0);
    expect(continuedAfterTools).toBeGreaterThan(0);
    const invoked = new Set(
      worker
        .events()
        .filter((e) => e.worker === 'invoke')
        .map((e) => e.function),
    );
    expect([...invoked].sort()).toEqual(['feeder', 'reward', 'rollout', 'run-starter', 'tool-call']);

    // The learner trained each group exactly once (its metrics log) and nothing is left in any queue.
    const metrics = Buffer.from((await s.blobs.get(`${keys.metrics(runId)}metrics.jsonl`))!)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { groups: number; duplicate_groups: number });
    expect(metrics.reduce((n, m) => n + m.groups, 0)).toBe(8);
    for (const q of Object.keys(QUEUES) as QueueName[]) {
      expect(await s.peek(q), `${q} is empty`).toEqual([]);
      expect(await s.peek(q, true), `${q}'s dead-letter queue is empty`).toEqual([]);
    }
  }, 900_000);
});

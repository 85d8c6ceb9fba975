// The whole run on LocalStack: `toolrl submit` -> S3 notification -> run-starter -> feeder -> rollout ->
// tool-call -> reward -> scored groups -> the learner (SQS driver, tiny model, a real process) -> policy
// versions published -> later trajectories sampled by newer versions -> the run completes, `toolrl status` says
// so, and `toolrl view --env` serves it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectTaggingCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Client } from '#shared/adapters/aws/clients';
import { readJson } from '#shared/pipeline/blob-json';
import { ScoredGroupSchema } from '#shared/schemas/scored-group';
import { keys, QUEUES, type QueueName } from '#shared/topology';
import type { RunInfo, TrajectoryDetail, TrajectoryPage } from '#shared/viewer/api';
import { lastSftLoss } from '../helpers/demonstrations.ts';
import { Scenario, until } from './support/harness.ts';
import { assertLocalStackUp, localstack } from './support/localstack.ts';
import { learnerLines, writeRun } from './support/run-fixture.ts';
import { getJson, startViewer } from './support/viewer.ts';

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
    // 2 groups per learner step (so up to 4 steps, policy v1..v4), after an SFT warm start that memorises the 8
    // rows' correct calls (checked below), so that the tiny model calls the calculator on any CPU. The feeder keeps
    // batch_prompts x (1 + max_staleness) = 4 groups in flight, so p0..p3 are sampled by v0, p4 and p5 are fed
    // after step 1 and p6 and p7 after step 2 (v2 is published before the learner state that frees their
    // slots). v2 is certain: after step 1, p4..p7 (sampled by v1 or later) cannot be stale before v3, so at
    // least two more groups train; and p6 and p7 (sampled by v2, stale only at v4) always train.
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
    const run = await writeRun(s.dir, {
      prompts: 8,
      groupSize: 4,
      batchPrompts: 2,
      memorise: true,
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
    expect(lastSftLoss(learnerLines(s.dir, runId)), 'the warm start memorised the rows').toBeLessThan(0.02);
    expect(final.totals.groupsPlanned).toBe(8);

    // and `toolrl status` says so, with the learner's step and version. Every group is settled once: trained, or
    // dropped as stale when it arrives more than max_staleness (1) versions late, which the order rollouts finish
    // in can make happen; each step trains 2 groups (the last one what is left), so steps = ceil(trained / 2).
    const text = await s.toolrl(['status', runId, '--env', s.env]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^status\s+completed/m);
    const line =
      /learner\s+step (\d+)\/\d+\s+policy v(\d+)\s+reward -?\d+\.\d{3}\s+groups (\d+)\/8 trained, (\d+) dropped/.exec(
        text.stdout,
      );
    expect(line, text.stdout).not.toBeNull();
    const [step, version, trained, dropped] = line!.slice(1).map(Number) as [number, number, number, number];
    expect(trained + dropped).toBe(8);
    // the first two groups scored are sampled by v0 while the learner is at v0: they are always trained
    expect(trained).toBeGreaterThanOrEqual(2);
    const drops = readFileSync(join(s.dir, 'learners', runId, 'learner.out.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; reason?: string })
      .filter((l) => l.type === 'dropped');
    expect(drops.map((d) => d.reason)).toEqual(Array(dropped).fill('stale'));
    expect(step).toBe(Math.ceil(trained / 2));
    expect(version).toBe(step);
    // the learner got past its second step: v2 was published (see GIVEN)
    expect(step).toBeGreaterThanOrEqual(2);
    const json = JSON.parse((await s.toolrl(['status', runId, '--env', s.env, '--json'])).stdout);
    expect(json).toMatchObject({
      status: 'completed',
      step,
      policyVersion: step,
      groupsConsumed: trained,
      groupsDropped: dropped,
    });
    const ckpt = await s.lastCheckpoint(runId);
    expect(ckpt.consumedGroupIds).toHaveLength(trained);
    expect([...ckpt.consumedGroupIds, ...ckpt.droppedGroupIds].sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => `e0-p${i}`),
    );

    // Every policy version the learner published is in the bucket, v2 among them.
    for (let v = 0; v <= step; v++)
      expect(await s.blobs.head(`${keys.policyVersion(runId, v)}manifest.json`), `v${v}`).toBeDefined();
    expect(await s.blobs.head(`runs/${runId}/policy/v2/manifest.json`)).toBeDefined();

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
    // p6 and p7 were fed after v2 was published, and a group's first turn reads LATEST.json, so they carry it
    expect(Math.max(...versions)).toBeGreaterThanOrEqual(2);
    // The stored trajectories carry the lifecycle tag the bucket expires them by.
    const trajectory = keys.trajectory(runId, 'e0-p0', 0);
    const tagging = await s3Client(localstack()).send(
      new GetObjectTaggingCommand({ Bucket: s.resources.bucket, Key: trajectory }),
    );
    expect(tagging.TagSet).toEqual([{ Key: 'toolrl-lifecycle', Value: 'trajectory' }]);
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

    // The learner trained each of those groups once (its metrics log) and nothing is left in any queue.
    const metrics = Buffer.from((await s.blobs.get(`${keys.metrics(runId)}metrics.jsonl`))!)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { groups: number; duplicate_groups: number });
    expect(metrics.reduce((n, m) => n + m.groups, 0)).toBe(trained);
    const all = Object.keys(QUEUES) as QueueName[];
    await s.expectDrained(all);
    await s.expectNoDeadLetters(all);

    // `toolrl view --env` serves the run from the bucket: every group and trajectory, the step that trained each
    // trained group (metrics/batches.jsonl), and a trajectory's tokens through the tokenizer of its bundle.
    const viewer = await startViewer(s, runId);
    try {
      let info = await getJson<RunInfo>(`${viewer.url}/api/run`);
      await until(async () => {
        info = await getJson<RunInfo>(`${viewer.url}/api/run`);
        return info.indexing.read >= info.indexing.listed;
      }, 'the viewer to index every group');
      expect(info).toMatchObject({
        status: 'completed',
        counts: { groups: 8, trajectories: 32, metricRows: step },
      });
      expect(info.problems).toEqual([]);
      const page = await getJson<TrajectoryPage>(`${viewer.url}/api/trajectories?limit=50`);
      expect(page.total).toBe(32);
      expect(page.rows.filter((r) => r.step !== null)).toHaveLength(4 * trained);
      const t = await getJson<TrajectoryDetail>(`${viewer.url}/api/trajectories/e0-p0/0`);
      expect(t.pieces).toHaveLength(t.trajectory.tokenIds.length);
    } finally {
      expect(await viewer.stop()).toBe(0);
    }
  });
});

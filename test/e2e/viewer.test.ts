// `toolrl view RUN --env ENV` on LocalStack's S3: the same key layout read from the environment's bucket. A run is
// uploaded there as a run leaves it (groups, metrics, validation summaries, the tokenizer of its policy bundle) with
// a torn metrics line and an unreadable group; the viewer serves its pages and names the bad files, reads the
// tokenizer from the bucket to show tokens, samples the environment's queue depths, says which runs exist for an
// unknown id, and writes nothing to the bucket. The whole pipeline run on LocalStack, viewed, is in
// happy-path.test.ts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/topology';
import type { QueueSamples, RunInfo, TrajectoryDetail, TrajectoryPage } from '#shared/viewer/api';
import { writeSyntheticRun } from '../helpers/viewer-run.ts';
import { Scenario, until } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';
import { getJson, startViewer } from './support/viewer.ts';

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

/** Every file of a folder, uploaded to the bucket under the same key. */
async function upload(root: string): Promise<void> {
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
  for (const f of walk(root)) await s.blobs.put(relative(root, f).split('\\').join('/'), readFileSync(f));
}

describe('toolrl view --env (LocalStack)', () => {
  it("serves a run from the environment's bucket, names what it cannot read and writes nothing", async () => {
    const run = await writeSyntheticRun(join(s.dir, 'run'), 'r-view', {
      groups: 24,
      groupSize: 4,
      batchPrompts: 4,
      valPrompts: 2,
    });
    await upload(join(s.dir, 'run'));
    const metricsKey = `${keys.metrics('r-view')}metrics.jsonl`;
    await s.blobs.put(
      metricsKey,
      `${Buffer.from((await s.blobs.get(metricsKey))!).toString()}{"step": 7, "rew`,
    );
    await s.blobs.put(keys.group('r-view', 'e0-p5'), '{"schemaVersion": 1, "runId": "r-view", "gro');
    const before = (await s.blobs.list('runs/')).map((b) => `${b.key} ${b.etag}`);

    const viewer = await startViewer(s, 'r-view');
    try {
      expect(viewer.stderr()).toMatch(
        /could not read runs\/r-view\/metrics\/metrics\.jsonl: line 7, the last, is cut short/,
      );
      let info = await getJson<RunInfo>(`${viewer.url}/api/run`);
      await until(async () => {
        info = await getJson<RunInfo>(`${viewer.url}/api/run`);
        return info.indexing.read >= info.indexing.listed;
      }, 'the viewer to index every group');
      expect(info).toMatchObject({
        found: true,
        status: 'completed',
        where: `s3://${s.resources.bucket}/runs/r-view/`,
        counts: { metricRows: run.steps, groups: 23 + 4, trajectories: 23 * 4 + 4, evals: 2 },
      });
      expect(info.problems.map((p) => p.key).sort()).toEqual([keys.group('r-view', 'e0-p5'), metricsKey]);
      const page = await getJson<TrajectoryPage>(
        `${viewer.url}/api/trajectories?split=train&minReward=0&limit=10`,
      );
      expect(page.total).toBe(run.rows.filter((r) => r.reward >= 0 && r.groupId !== 'e0-p5').length);
      expect(page.rows.length).toBe(Math.min(10, page.total));
      // Token text comes from the tokenizer of the run's bundle, read from the bucket.
      const t = await getJson<TrajectoryDetail>(`${viewer.url}/api/trajectories/e0-p3/2`);
      expect(t.tokenProblem).toBeNull();
      expect(t.pieces).toHaveLength(t.trajectory.tokenIds.length);
      // The environment's queues, sampled from SQS (the run's own queues do not exist on AWS).
      const q = await getJson<QueueSamples>(`${viewer.url}/api/queues`);
      expect(Object.keys(q.depths)).toContain('rollout-dlq');
      expect(q.note).toMatch(new RegExp(`environment ${s.env}'s queues`));
      const html = await (await fetch(`${viewer.url}/`)).text();
      expect(html).toContain('/app.js');
    } finally {
      expect(await viewer.stop()).toBe(0);
    }
    expect((await s.blobs.list('runs/')).map((b) => `${b.key} ${b.etag}`)).toEqual(before);
  });

  it('names the runs in the bucket when the id is not one of them', async () => {
    const viewer = await startViewer(s, 'r-nope');
    try {
      expect(viewer.stderr()).toMatch(/no run r-nope at s3:\/\/.* yet; .*\(runs there: r-view\)/);
      const info = await getJson<RunInfo>(`${viewer.url}/api/run`);
      expect(info).toMatchObject({ found: false, otherRuns: ['r-view'] });
    } finally {
      await viewer.stop();
    }
  });
});

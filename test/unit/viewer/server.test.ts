// `toolrl view`'s server over a generated run of 10,000 trajectories: the table is served a page at a time,
// filtered and sorted on the server; opening a trajectory reads its one group file; a refresh reads only the new
// manifests; bad files are named and the rest still shown; a missing run says which runs exist; the Host and
// Origin rules refuse other pages; and nothing in the run's folder changes.
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/topology';
import type { GroupDetail, RunInfo, TrajectoryDetail, TrajectoryPage } from '#shared/viewer/api';
import { buildPage } from '#shared/viewer/page-build';
import { serveRun, type ViewServer } from '#shared/viewer/server';
import { folderSource, type ReadOnlyBlobs, type RunSource } from '#shared/viewer/source';
import { MAX_PAGE } from '#shared/viewer/trajectory-index';
import { type SyntheticRun, writeSyntheticRun } from '../../helpers/viewer-run.ts';

const dir = mkdtempSync(join(tmpdir(), 'toolrl-viewer-'));
const assets = join(dir, 'page');
const RUN = 'big-run';
let run: SyntheticRun;

/** A folder source whose reads are counted by key. */
function counted(source: RunSource): { source: RunSource; gets: string[] } {
  const gets: string[] = [];
  const b = source.blobs;
  const blobs: ReadOnlyBlobs = {
    ...b,
    get: (k) => {
      gets.push(k);
      return b.get(k);
    },
  };
  return { source: { ...source, blobs }, gets };
}

/** Every file under `root` with its size and modification time. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const s = statSync(p);
        out[p.slice(root.length)] = `${s.size}:${s.mtimeMs}`;
      }
    }
  };
  walk(root);
  return out;
}

/** GET through node:http, which sends the Host and Origin given (fetch would replace Host). */
function get<T>(server: ViewServer, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; bytes: number; body: T }>((resolve, reject) => {
    request(`${server.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, bytes: text.length, body: JSON.parse(text) as T });
      });
    })
      .on('error', reject)
      .end();
  });
}

beforeAll(async () => {
  await buildPage(assets);
  run = await writeSyntheticRun(join(dir, 'work'), RUN, {
    groups: 1250,
    groupSize: 8,
    batchPrompts: 16,
    valPrompts: 3,
  });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('toolrl view over 10,000 trajectories', () => {
  let server: ViewServer;
  let gets: string[];
  let before: Record<string, string>;
  beforeAll(async () => {
    before = snapshot(join(dir, 'work'));
    const c = counted(folderSource(join(dir, 'work'), RUN));
    gets = c.gets;
    server = await serveRun(c.source, { assetsDir: assets, refreshEveryMs: 0 });
    await server.view.settled();
  });
  afterAll(() => server?.close());

  it('indexes every trajectory and answers a page of them, never all', async () => {
    const info = await get<RunInfo>(server, '/api/run');
    expect(info.body.counts).toMatchObject({
      trajectories: 10_000 + 6,
      groups: 1250 + 6,
      metricRows: run.steps,
      evals: 2,
    });
    expect(info.body.indexing).toEqual({ listed: 1256, read: 1256 });
    const page = await get<TrajectoryPage>(server, '/api/trajectories?split=train&limit=50');
    expect(page.body.total).toBe(10_000);
    expect(page.body.rows).toHaveLength(50);
    // A page is a page: 50 rows of summaries, no token arrays (a whole run would be megabytes).
    expect(page.bytes).toBeLessThan(40_000);
    expect(Object.keys(page.body.rows[0]!)).not.toContain('tokenIds');
    const capped = await get<TrajectoryPage>(server, '/api/trajectories?limit=100000');
    expect(capped.body.rows).toHaveLength(MAX_PAGE);
    const past = await get<TrajectoryPage>(server, '/api/trajectories?offset=20000');
    expect(past.body.rows).toEqual([]);
  });

  it('filters by reward range, step, version, prompt, finish reason and failed tool calls, on the server', async () => {
    const count = (f: (r: SyntheticRun['rows'][number]) => boolean) => run.rows.filter(f).length;
    const q = async (query: string) =>
      (await get<TrajectoryPage>(server, `/api/trajectories?split=train&${query}`)).body;
    const byReward = await q('minReward=0.5&maxReward=0.9&limit=200');
    expect(byReward.total).toBe(count((r) => r.reward >= 0.5 && r.reward <= 0.9));
    for (const r of byReward.rows) expect(r.reward >= 0.5 && r.reward <= 0.9).toBe(true);
    const step = await q('step=3');
    expect(step.total).toBe(16 * 8);
    expect(new Set(step.rows.map((r) => r.step))).toEqual(new Set([3]));
    expect((await q('step=3-5')).total).toBe(3 * 16 * 8);
    expect((await q('version=10')).total).toBe(count((r) => r.version === 10));
    expect((await q('prompt=What is 1100 plus')).total).toBe(8); // group e0-p1000: a = 1100
    expect((await q('finish=length')).total).toBe(count((r) => r.finishReason === 'length'));
    expect((await q('failed=1')).total).toBe(count((r) => r.failed));
    expect((await q('failed=0&minReward=0')).total).toBe(count((r) => !r.failed && r.reward >= 0));
    expect(step.facets.steps).toEqual([1, run.steps]);
    const bad = await get<{ detail: string }>(server, '/api/trajectories?step=three');
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/"three" is neither a number nor a range/);
  });

  it('sorts by reward across all pages', async () => {
    const top = (
      await get<TrajectoryPage>(server, '/api/trajectories?split=train&sort=reward&desc=1&limit=5')
    ).body;
    const rewards = run.rows.map((r) => r.reward).sort((a, b) => b - a);
    expect(top.rows.map((r) => r.reward)).toEqual(rewards.slice(0, 5));
    const last = (await get<TrajectoryPage>(server, '/api/trajectories?split=train&sort=reward&offset=9999'))
      .body;
    expect(last.rows.map((r) => r.reward)).toEqual([rewards[0]]);
  });

  it('opens a trajectory by reading its one group file, with its tokens as text', async () => {
    gets.length = 0;
    const t = await get<TrajectoryDetail>(server, '/api/trajectories/e0-p777/5');
    expect(t.status).toBe(200);
    expect(gets).toEqual([keys.group(RUN, 'e0-p777')]);
    const want = run.rows.find((r) => r.groupId === 'e0-p777' && r.sampleIndex === 5)!;
    expect(t.body.trajectory.reward).toBe(want.reward);
    expect(t.body.step).toBe(want.step);
    expect(t.body.pieces).toHaveLength(t.body.trajectory.tokenIds.length);
    expect(t.body.tokenProblem).toBeNull();
    // GRPO: (r - mean) / (std + 1e-6) over the group's 8 rewards, std unbiased.
    const rewards = run.rows.filter((r) => r.groupId === 'e0-p777').map((r) => r.reward);
    const mean = rewards.reduce((a, b) => a + b, 0) / 8;
    const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / 7);
    expect(t.body.advantage).toBeCloseTo((want.reward - mean) / (std + 1e-6), 9);
    const g = await get<GroupDetail>(server, '/api/groups/e0-p777');
    expect(g.body.samples.map((s) => s.reward)).toEqual(rewards);
    expect(g.body.samples[5]!.advantage).toBeCloseTo(t.body.advantage!, 12);
    expect((await get(server, '/api/trajectories/e0-p777/9')).status).toBe(404);
    expect((await get(server, '/api/groups/e9-p0')).status).toBe(404);
  });

  it('reads only the new group files on a refresh', async () => {
    const work = join(dir, 'work');
    const path = (groupId: string) => join(work, ...keys.group(RUN, groupId).split('/'));
    const template = JSON.parse(readFileSync(path('e0-p0'), 'utf8')) as { groupId: string; promptId: string };
    for (const p of [1250, 1251, 1252])
      writeFileSync(
        path(`e0-p${p}`),
        JSON.stringify({ ...template, groupId: `e0-p${p}`, promptId: `p${p}` }),
      );
    gets.length = 0;
    await server.view.settled();
    expect(gets.filter((k) => k.includes('/groups/')).sort()).toEqual(
      [1250, 1251, 1252].map((p) => keys.group(RUN, `e0-p${p}`)),
    );
    expect((await get<RunInfo>(server, '/api/run')).body.counts.trajectories).toBe(10_000 + 6 + 24);
  });

  it('answers only its own page: another Host or Origin is refused, and nothing but GET', async () => {
    expect((await get(server, '/api/run', { host: 'attacker.example' })).status).toBe(403);
    expect((await get(server, '/api/run', { origin: 'http://attacker.example' })).status).toBe(403);
    expect((await get(server, '/api/run', { origin: server.url })).status).toBe(200);
    const post = await fetch(`${server.url}/api/run`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    const page = await fetch(`${server.url}/`);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(await page.text()).toContain('/app.js');
  });

  it('has changed nothing in the run folder', () => {
    const after = snapshot(join(dir, 'work'));
    // The only differences are the three manifests this test itself wrote above.
    const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
    expect(changed.sort()).toEqual([1250, 1251, 1252].map((p) => `/${keys.group(RUN, `e0-p${p}`)}`).sort());
  });
});

describe('toolrl view on bad input', () => {
  it('names a torn metrics line, an unparsable group and a bad record, and shows the rest', async () => {
    const root = join(dir, 'bad');
    await writeSyntheticRun(root, 'bad-run', { groups: 8, groupSize: 2, batchPrompts: 2 });
    const at = (key: string) => {
      const path = join(root, ...key.split('/'));
      mkdirSync(dirname(path), { recursive: true });
      return path;
    };
    appendFileSync(at(`${keys.metrics('bad-run')}metrics.jsonl`), '{"step": 5, "reward_mea');
    writeFileSync(at(keys.group('bad-run', 'e0-p3')), '{"schemaVersion": 1, "runId": "bad-run", "grou');
    writeFileSync(
      at(keys.group('bad-run', 'e0-p4')),
      JSON.stringify({ schemaVersion: 1, runId: 'bad-run', groupId: 'e0-p4' }),
    );
    writeFileSync(at(keys.deadLetter('bad-run', 'e0-p9', 'reward', 'm-1')), 'not json');
    writeFileSync(
      at(keys.deadLetter('bad-run', 'e0-p3', 'reward', 'm-2')),
      JSON.stringify({
        schemaVersion: 1,
        runId: 'bad-run',
        groupId: 'e0-p3',
        split: 'train',
        stage: 'reward',
        sampleIndex: 1,
        messageId: 'm-2',
        reason: 'Error: reward blew up (after 5 attempts)',
        receiveCount: 5,
        deadLetteredAt: '2026-01-01T00:00:00.000Z',
      }),
    );
    const before = snapshot(root);
    const server = await serveRun(folderSource(root, 'bad-run'), { assetsDir: assets, refreshEveryMs: 0 });
    try {
      await server.view.settled();
      const info = (await get<RunInfo>(server, '/api/run')).body;
      const problem = (key: string) => info.problems.find((p) => p.key === key)?.message;
      expect(problem(`${keys.metrics('bad-run')}metrics.jsonl`)).toMatch(
        /line 5, the last, is cut short .*skipped/,
      );
      expect(problem(keys.group('bad-run', 'e0-p3'))).toMatch(/group manifest unreadable: not JSON/);
      expect(problem(keys.group('bad-run', 'e0-p4'))).toMatch(
        /group manifest unreadable: promptId: .*; epoch: .*\(and \d+ more\)/,
      );
      expect(problem(keys.deadLetter('bad-run', 'e0-p9', 'reward', 'm-1'))).toMatch(/not JSON/);
      // What could be read is all there: 4 metric rows, the 6 good groups, the good dead letter.
      expect(info.counts).toMatchObject({ metricRows: 4, groups: 6, trajectories: 12, deadLetters: 1 });
      const dead = (
        await get<{ records: { groupId: string; groupScored: boolean }[]; byStage: Record<string, unknown> }>(
          server,
          '/api/dead-letters',
        )
      ).body;
      expect(dead.records.map((r) => [r.groupId, r.groupScored])).toEqual([['e0-p3', false]]);
      expect(dead.byStage).toEqual({
        reward: {
          messages: 1,
          groups: 1,
          reasons: [{ reason: 'Error: reward blew up (after 5 attempts)', count: 1 }],
        },
      });
      // The group the dead letter links to opens with what there is: the problem and the dead letter, no samples.
      const g = (await get<GroupDetail>(server, '/api/groups/e0-p3')).body;
      expect(g.source).toBe('none');
      expect(g.problems[0]!.message).toMatch(/not JSON/);
      expect(g.deadLetters[0]!.reason).toMatch(/reward blew up/);
    } finally {
      await server.close();
    }
    expect(snapshot(root)).toEqual(before);
  });

  it('says a run id does not exist, names the runs that do, and shows the run once it appears', async () => {
    const root = join(dir, 'bad');
    const server = await serveRun(folderSource(root, 'no-such-run'), {
      assetsDir: assets,
      refreshEveryMs: 0,
    });
    try {
      const info = (await get<RunInfo>(server, '/api/run')).body;
      expect(info).toMatchObject({ found: false, otherRuns: ['bad-run'], status: null });
      expect((await get<TrajectoryPage>(server, '/api/trajectories')).body.total).toBe(0);
      await writeSyntheticRun(root, 'no-such-run', { groups: 2, groupSize: 2, batchPrompts: 1 });
      await server.view.settled();
      const now = (await get<RunInfo>(server, '/api/run')).body;
      expect(now).toMatchObject({ found: true, status: 'completed', counts: { trajectories: 4 } });
    } finally {
      await server.close();
    }
  });
});

// `toolrl view` in a real browser (Debian's Chromium through playwright-core) on a real run: a short embedded run
// of the tiny model, warm-started to call the calculator, validated after every version. The page's curves hold
// the run's points and show values on hover; a trajectory opened from the table shows its tool call and the
// result; the reward filter selects what the stored groups say; a validation question is compared across
// versions. Then a generated run of 10,000 trajectories with bad files: a page of rows at a time, and what could
// not be read named on the page. Nothing is fetched from anywhere but the viewer's own server.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrainResult } from '#shared/runtime/train';
import type { ScoredGroup } from '#shared/schemas/scored-group';
import { keys } from '#shared/topology';
import { buildPage } from '#shared/viewer/page-build';
import { serveRun, type ViewServer } from '#shared/viewer/server';
import { folderSource } from '#shared/viewer/source';
import { launchChromium, openPage, type WatchedPage } from '../helpers/browser.ts';
import { memoriseSft, rowDemonstrations } from '../helpers/demonstrations.ts';
import { HANG_MS } from '../helpers/hang.ts';
import { writeSyntheticRun } from '../helpers/viewer-run.ts';
import { quickstartRows, scoredGroups, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const run = tinyRun('viewer');
const assets = mkdtempSync(join(tmpdir(), 'toolrl-viewer-page-'));
let browser: Browser;
let result: TrainResult;
let groups: Map<string, ScoredGroup>;
let server: ViewServer;
let w: WatchedPage;

beforeAll(async () => {
  await buildPage(assets);
  browser = await launchChromium();
  // 2 train questions, 1 per step (2 steps: v0, v1, v2), 4 samples each; 2 validation questions per version;
  // a warm start that memorises these four questions' correct calls, so that the model calls tools on any CPU.
  const train = (await quickstartRows('train')).slice(0, 2);
  const val = (await quickstartRows('val')).slice(0, 2);
  run.dataset('train.parquet', train);
  run.dataset('val.parquet', val);
  const config = tinyConfig({
    data: { val: 'val.parquet' },
    rollout: { n: 4, max_new_tokens: 48 },
    trainer: { eval_every: 1, sft: memoriseSft('sft.jsonl') },
  });
  const schema = (config.tools as { tools: { tool_schema: unknown }[] }).tools[0]!.tool_schema;
  writeFileSync(join(run.dir, 'sft.jsonl'), rowDemonstrations([...train, ...val], schema));
  result = await run.run(config);
  groups = scoredGroups(result);
  server = await serveRun(folderSource(join(run.dir, 'work'), result.runId), { assetsDir: assets });
  await server.view.settled();
  w = await openPage(browser, server.url);
});

afterAll(async () => {
  await server?.close();
  await browser?.close();
  run.close();
  rmSync(assets, { recursive: true, force: true });
});

/** Waits for the page (a render, a fetch, the next 3-second refresh), bounded only by the suite's hang guard. */
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: HANG_MS });

const all = () => [...groups.values()].flatMap((g) => g.trajectories.map((t) => ({ g, t })));

describe('toolrl view of a real run, in Chromium', () => {
  it('draws the curves with every step of metrics.jsonl and shows values on hover', async () => {
    expect(result.status).toBe('completed');
    const rows = stepMetrics(result);
    const { page } = w;
    await page.goto(`${server.url}/`);
    const reward = page.locator('[data-chart="reward"]');
    await poll(() => reward.getAttribute('data-points')).toBe(String(rows.length));
    const components = Object.keys(rows[0]!).filter((k) => k.startsWith('reward/'));
    expect(components.length).toBeGreaterThan(0);
    expect(
      (await page.locator('[data-chart="components"]').getAttribute('data-series'))!.split('|').sort(),
    ).toEqual(components.sort());
    for (const id of ['loss', 'kl', 'entropy', 'clip', 'grad-norm', 'timing', 'tool-calls', 'finish'])
      expect(await page.locator(`[data-chart="${id}"]`).getAttribute('data-points'), id).toBe(
        String(rows.length),
      );
    await expect
      .poll(() => page.locator('[data-chart="validation"]').getAttribute('data-points'))
      .toBe(String(result.evals.length));
    // Hover over the last step: the legend shows that step and its reward_mean.
    const over = reward.locator('.u-over');
    const box = (await over.boundingBox())!;
    await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
    const values = reward.locator('.u-legend .u-series .u-value');
    await poll(() => values.nth(0).textContent()).toBe(String(rows.at(-1)!.step));
    expect(Number(await values.nth(1).textContent())).toBeCloseTo(rows.at(-1)!.reward_mean!, 3);
  });

  it('opens a trajectory from the table and shows its tool call, the result and its tokens', async () => {
    const withCall = all().find(({ t }) => t.turns.some((u) => u.toolCalls.length > 0));
    expect(withCall, 'a trajectory with a tool call (the warm start teaches the calls)').toBeDefined();
    const { g, t } = withCall!;
    const call = t.turns.flatMap((u) => u.toolCalls)[0]!;
    const { page } = w;
    await page.goto(`${server.url}/#/trajectories`);
    await page.fill('input[name="prompt"]', g.groupId);
    await page.press('input[name="prompt"]', 'Enter');
    const row = page.locator(`tr.row[data-group="${g.groupId}"][data-sample="${t.sampleIndex}"]`);
    await row.locator('td.prompt').click();
    await page.locator('.conversation').waitFor();
    expect(page.url()).toContain(`#/t/${g.groupId}/${t.sampleIndex}`);
    const shown = page.locator('.conversation .call').first();
    expect(await shown.locator('.call-name').textContent()).toBe(call.name);
    expect(await shown.locator('.call-args').textContent()).toBe(JSON.stringify(call.arguments));
    if (call.result.ok) expect(await shown.locator('.call-output').textContent()).toBe(call.result.output);
    else expect(await shown.locator('.call-error').textContent()).toContain(call.result.error!.type);
    // The tool message the model read follows, and every token is there with its loss mask.
    const tool = t.messages.find((m) => m.role === 'tool')!;
    expect(await page.locator('.msg.tool pre').first().textContent()).toBe(tool.content);
    expect(await page.locator('.tokens .tok').count()).toBe(t.tokenIds.length);
    expect(await page.locator('.tokens .tok.mask1').count()).toBe(t.lossMask.filter((m) => m === 1).length);
  });

  it('filters the table by reward as the stored groups say', async () => {
    // The highest reward some trajectory falls short of (or, when all scored alike, just above it): the filter
    // always leaves some trajectories out, so the count it shows can only come from filtering.
    const rewards = all().map(({ t }) => t.reward);
    const top = Math.max(...rewards);
    const threshold = rewards.some((r) => r < top) ? top : top + 0.5;
    const expected = rewards.filter((r) => r >= threshold).length;
    expect(expected).toBeLessThan(rewards.length);
    const { page } = w;
    await page.goto(`${server.url}/#/trajectories`);
    await poll(() => page.locator('.pager .count').textContent()).toMatch(
      new RegExp(` of ${rewards.length}$`),
    );
    await page.fill('input[name="minReward"]', String(threshold));
    await page.press('input[name="minReward"]', 'Enter');
    await poll(() => page.url()).toContain(`minReward=${threshold}`);
    await poll(() => page.locator('.pager .count').textContent()).toMatch(new RegExp(` of ${expected}$`));
    const shown = await page
      .locator('tr.row')
      .evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('data-reward'))));
    expect(shown).toHaveLength(Math.min(50, expected));
    for (const r of shown) expect(r).toBeGreaterThanOrEqual(threshold);
  });

  it("compares a validation question's answers across versions", async () => {
    const versions = result.evals.map((e) => e.policyVersion);
    expect(versions).toEqual([0, 1, 2]);
    const { page } = w;
    await page.goto(`${server.url}/#/validation`);
    await page.locator('tr.row[data-prompt="val-p0"] td.prompt').click();
    await page.locator('.compare').waitFor();
    const sections = page.locator('.compare section.version');
    await poll(() => sections.count()).toBe(versions.length);
    for (const [i, v] of versions.entries()) {
      const section = sections.nth(i);
      expect(await section.getAttribute('data-version')).toBe(String(v));
      const stored = groups.get(`val-v${v}-p0`)!.trajectories[0]!;
      expect(await section.locator('.answer').first().textContent()).toBe(stored.turns.at(-1)!.text);
    }
  });

  it("shows a group's samples side by side with their advantages", async () => {
    const g = groups.get('e0-p0')!;
    const { page } = w;
    await page.goto(`${server.url}/#/g/e0-p0`);
    const cards = page.locator('.samples .sample');
    await poll(() => cards.count()).toBe(g.trajectories.length);
    const adv = await page.locator('.samples .sample .advantage').allTextContents();
    const rewards = g.trajectories.map((t) => t.reward);
    // GRPO: advantages sum to 0 over the group and order as the rewards do.
    expect(Math.abs(adv.map(Number).reduce((a, b) => a + b, 0))).toBeLessThan(1e-3);
    for (let i = 0; i < rewards.length; i++)
      for (let j = 0; j < rewards.length; j++)
        if (rewards[i]! > rewards[j]! + 1e-9) expect(Number(adv[i])).toBeGreaterThan(Number(adv[j]));
  });

  it('loaded nothing from anywhere else and logged no error', () => {
    expect(w.foreign).toEqual([]);
    expect(w.errors).toEqual([]);
  });
});

describe('toolrl view of a run that goes on, in Chromium', () => {
  it('marks its stages, and shows new steps and groups as the run writes them, without a reload', async () => {
    const root = mkdtempSync(join(tmpdir(), 'toolrl-viewer-live-'));
    const live = await writeSyntheticRun(root, 'live', {
      groups: 8,
      groupSize: 2,
      batchPrompts: 2,
      status: 'running',
      stages: ['format', 'full'],
    });
    const s = await serveRun(folderSource(root, 'live'), { assetsDir: assets });
    const p = await openPage(browser, s.url);
    try {
      const { page } = p;
      await page.goto(`${s.url}/`);
      const reward = page.locator('[data-chart="reward"]');
      await poll(() => reward.getAttribute('data-points')).toBe(String(live.steps));
      expect(await page.locator('.where').textContent()).toContain('refreshing every 3 s');
      // The curriculum's stage boundaries (metrics/batches.jsonl) are marked on the step charts.
      expect(await reward.getAttribute('data-marks')).toBe('format@1|full@3');
      // The learner writes step 5 and the pipeline a new group, as a running run does.
      const at = (key: string) => join(root, ...key.split('/'));
      appendFileSync(
        at(`${keys.metrics('live')}metrics.jsonl`),
        `${JSON.stringify({ step: 5, reward_mean: 0.25, reward_std: 0.1 })}\n`,
      );
      const group = JSON.parse(readFileSync(at(keys.group('live', 'e0-p0')), 'utf8')) as ScoredGroup;
      writeFileSync(
        at(keys.group('live', 'e0-p8')),
        JSON.stringify({ ...group, groupId: 'e0-p8', promptId: 'p8' }),
      );
      await poll(() => reward.getAttribute('data-points')).toBe(String(live.steps + 1));
      await poll(() => page.locator('nav a').nth(1).textContent()).toBe(`Trajectories (${2 * 9})`);
      expect(p.errors).toEqual([]);
    } finally {
      await p.page.close();
      await s.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('toolrl view of 10,000 trajectories with bad files, in Chromium', () => {
  it('pages the table and names what it could not read', async () => {
    const root = mkdtempSync(join(tmpdir(), 'toolrl-viewer-big-'));
    const big = await writeSyntheticRun(root, 'big', { groups: 1250, groupSize: 8, batchPrompts: 16 });
    const at = (key: string) => join(root, ...key.split('/'));
    writeFileSync(
      at(`${keys.metrics('big')}metrics.jsonl`),
      `${readFileSync(at(`${keys.metrics('big')}metrics.jsonl`), 'utf8')}{"step": 80, "rew`,
    );
    writeFileSync(at(keys.group('big', 'e0-p7')), '{"schemaVersion": 1, "runId": "big", "gro');
    const s = await serveRun(folderSource(root, 'big'), { assetsDir: assets });
    const p = await openPage(browser, s.url);
    try {
      await s.view.settled();
      const { page } = p;
      await page.goto(`${s.url}/#/trajectories?split=train`);
      await poll(() => page.locator('.pager .count').textContent()).toBe('1–50 of 9992');
      expect(await page.locator('tr.row').count()).toBe(50);
      await page.click('text=next →');
      await poll(() => page.locator('.pager .count').textContent()).toBe('51–100 of 9992');
      const problems = await page.locator('.problems-box li').allTextContents();
      expect(problems.some((t) => /metrics\.jsonl.*line \d+, the last, is cut short/.test(t))).toBe(true);
      expect(problems.some((t) => /groups\/e0-p7\.json.*not JSON/.test(t))).toBe(true);
      // The curves still have every whole row.
      await page.goto(`${s.url}/#/curves`);
      await expect
        .poll(() => page.locator('[data-chart="reward"]').getAttribute('data-points'))
        .toBe(String(big.steps));
      expect(p.foreign).toEqual([]);
      expect(p.errors).toEqual([]);
    } finally {
      await p.page.close();
      await s.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

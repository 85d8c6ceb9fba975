// The README's pictures of `toolrl view`: a run's Curves tab and one of its trajectories, taken in Debian's
// Chromium through playwright-core, as the browser tests drive it.
//   npx tsx scripts/viewer-screenshot.ts RUN_ID WORKDIR [OUT_DIR]   (default docs/: viewer.png, viewer-trajectory.png)
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { TrajectoryPage } from '#shared/viewer/api';
import { ensurePage } from '#shared/viewer/page-build';
import { serveRun } from '#shared/viewer/server';
import { folderSource } from '#shared/viewer/source';

const [runId, workdir, out = 'docs'] = process.argv.slice(2);
if (!runId || !workdir) {
  process.stderr.write('usage: npx tsx scripts/viewer-screenshot.ts RUN_ID WORKDIR [OUT_DIR]\n');
  process.exit(2);
}
const server = await serveRun(folderSource(workdir, runId), { assetsDir: await ensurePage() });
await server.view.settled();
const browser = await chromium.launch({
  executablePath: process.env.TOOLRL_CHROMIUM ?? '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${server.url}/`);
  await page.locator('[data-chart="reward"] canvas').waitFor();
  // The cursor on the reward chart at three quarters of the run: its values in every chart's legend (synced).
  const box = (await page.locator('[data-chart="reward"] .u-over').boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.75, box.y + box.height / 2);
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, 'viewer.png') });
  // A trajectory that called a tool and scored well: the highest reward among those with a call.
  const res = await fetch(`${server.url}/api/trajectories?split=train&sort=reward&desc=1&failed=0&limit=200`);
  const best = ((await res.json()) as TrajectoryPage).rows.find((r) => r.toolCalls > 0);
  if (best) {
    await page.goto(`${server.url}/#/t/${best.groupId}/${best.sampleIndex}`);
    await page.locator('.tokens').waitFor();
    await page.screenshot({ path: join(out, 'viewer-trajectory.png') });
  }
  process.stdout.write(
    `wrote ${join(out, 'viewer.png')}${best ? ` and ${join(out, 'viewer-trajectory.png')}` : ''}\n`,
  );
} finally {
  await browser.close();
  await server.close();
}

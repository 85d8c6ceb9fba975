// A real browser for page tests: Debian's Chromium (installed by `npm run setup` when run as root) driven by
// playwright-core, never a downloaded browser. Each page records its console errors, failed loads and every
// request that left the server under test, for the test to assert on.
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.TOOLRL_CHROMIUM ?? '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}: the browser tests drive Debian's chromium package (npm run setup installs it ` +
        'when run as root; else sudo apt-get install chromium, or set TOOLRL_CHROMIUM to its path)',
    );
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}

export interface WatchedPage {
  readonly page: Page;
  /** Console errors, uncaught exceptions and failed requests. */
  readonly errors: string[];
  /** Requests to anywhere but `origin` (a CDN, say). */
  readonly foreign: string[];
}

export async function openPage(browser: Browser, origin: string): Promise<WatchedPage> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors: string[] = [];
  const foreign: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) foreign.push(r.url());
  });
  return { page, errors, foreign };
}

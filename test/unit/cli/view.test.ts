// `toolrl view` as a user runs it: the real command in a child process on a run folder. It prints the URL it
// serves, the page and the API answer there, it names a file it could not read, and Ctrl-C (SIGTERM) ends it with
// 0. A bad --port is a usage error (exit 2).
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keys } from '#shared/topology';
import type { RunInfo } from '#shared/viewer/api';
import { HANG_MS } from '../../helpers/hang.ts';
import { writeSyntheticRun } from '../../helpers/viewer-run.ts';

const bin = new URL('../../../bin/toolrl.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'toolrl-view-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `toolrl view ARGS --port 0` in `cwd`, once it prints the URL it serves. */
async function serveView(args: string[], cwd: string) {
  const child = spawn(process.execPath, [bin, 'view', ...args, '--port', '0'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /toolrl view: (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`exited ${code} before serving: ${stderr}`)));
  });
  return { child, exited, url, stdout: () => stdout, stderr: () => stderr };
}

describe('toolrl view', () => {
  it('serves a run folder on 127.0.0.1 until Ctrl-C, naming what it could not read', async () => {
    await writeSyntheticRun(dir, 'r-cli', { groups: 4, groupSize: 2, batchPrompts: 2 });
    appendFileSync(join(dir, ...`${keys.metrics('r-cli')}metrics.jsonl`.split('/')), '{"step": 3, "rew');
    const { child, exited, url, stdout, stderr } = await serveView(
      ['r-cli', '--workdir', dir],
      process.cwd(),
    );
    expect(stdout()).toContain(`(run r-cli, file://${join(dir, 'runs', 'r-cli')}/;`);
    expect(stderr()).toMatch(
      /could not read runs\/r-cli\/metrics\/metrics\.jsonl: line 3, the last, is cut short/,
    );
    const info = (await (await fetch(`${url}/api/run`)).json()) as RunInfo;
    expect(info).toMatchObject({ runId: 'r-cli', found: true, counts: { metricRows: 2 } });
    expect(await (await fetch(`${url}/`)).text()).toContain('<script type="module" src="/app.js">');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('serves a run of the current folder without --workdir, as `toolrl train` writes it by default', async () => {
    await writeSyntheticRun(dir, 'r-here', { groups: 2, groupSize: 2, batchPrompts: 2 });
    const { child, exited, url } = await serveView(['r-here'], dir);
    const info = (await (await fetch(`${url}/api/run`)).json()) as RunInfo;
    expect(info).toMatchObject({ runId: 'r-here', found: true });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses a port out of range', () => {
    const r = spawnSync(process.execPath, [bin, 'view', 'r', '--workdir', dir, '--port', '70000'], {
      encoding: 'utf8',
      timeout: HANG_MS,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--port must be 0\.\.65535, not 70000/);
  });
});

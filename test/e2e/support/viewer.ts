// `toolrl view RUN --env ENV` as a user runs it: the CLI as a process on LocalStack's endpoint, its URL read from
// the line it prints, stopped with SIGTERM (Ctrl-C) at the end.
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../../../infra/lib/docker-context.ts';
import { HANG_MS } from '../../helpers/hang.ts';
import type { Scenario } from './harness.ts';

export interface RunningViewer {
  readonly url: string;
  /** What it printed on stderr (warnings, problems). */
  stderr(): string;
  stop(): Promise<number | null>;
}

export function startViewer(s: Scenario, runId: string, timeoutMs = HANG_MS): Promise<RunningViewer> {
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=NodeVersionSupportWarning',
      'bin/toolrl.mjs',
      'view',
      runId,
      '--env',
      s.env,
      '--port',
      '0',
    ],
    { cwd: REPO_ROOT, env: s.processEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`toolrl view printed no URL in ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`toolrl view exited (${code}) before serving:\n${stdout}\n${stderr}`));
    });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const url = /toolrl view: (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)?.[1];
      if (!url) return;
      clearTimeout(timer);
      resolve({
        url,
        stderr: () => stderr,
        stop: () => {
          child.kill('SIGTERM');
          return exited;
        },
      });
    });
  });
}

export async function getJson<T>(url: string): Promise<T> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

// `toolrl train` as a user runs it, in a process of its own that a test can kill, and the run's files read back
// from its folder. Kills land at observable points, never after a fixed sleep: `signalWhen` polls the run's files
// until a condition holds, then freezes the whole process group (SIGSTOP), checks the condition again on the frozen
// run and only then sends the signal, so what was observed is what was killed; if the run moved on in between, it
// thaws it and keeps polling. Polls are bounded only as hang guards.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../bench/support/tiny-model.ts';
import { HANG_MS } from '../../helpers/hang.ts';

const POLL_MS = 25;

export interface TrainProcess {
  readonly child: ChildProcess;
  /** stderr so far (the CLI's progress and summary). */
  stderr(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `toolrl train CONFIG --workdir WORKDIR [--resume RUN_ID]`, in a process group of its own (as a shell job is). */
export function startTrain(configPath: string, workdir: string, resume?: string): TrainProcess {
  const args = [join(REPO_ROOT, 'bin', 'toolrl.mjs'), 'train', configPath, '--workdir', workdir];
  if (resume) args.push('--resume', resume);
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => err, exited };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it holds; fails naming `what` if the process exits first (or past the guard). */
export async function waitUntil(p: TrainProcess, cond: () => boolean, what: string): Promise<void> {
  let exited = false;
  void p.exited.then(() => {
    exited = true;
  });
  const until = Date.now() + HANG_MS;
  while (!cond()) {
    if (exited) throw new Error(`toolrl train exited before ${what}:\n${p.stderr().slice(-3000)}`);
    if (Date.now() > until) throw new Error(`${what}: not seen in ${HANG_MS / 1000} s`);
    await sleep(POLL_MS);
  }
}

/**
 * Sends `signal` once `cond` holds on a frozen run (see the file's head). `to`: the CLI process alone (`kill PID`),
 * or its whole process group (a terminal's Ctrl-C).
 */
export async function signalWhen(
  p: TrainProcess,
  cond: () => boolean,
  what: string,
  signal: NodeJS.Signals,
  to: 'process' | 'group' = 'process',
): Promise<void> {
  const pid = p.child.pid!;
  for (;;) {
    await waitUntil(p, cond, what);
    process.kill(-pid, 'SIGSTOP');
    if (cond()) break;
    process.kill(-pid, 'SIGCONT');
  }
  process.kill(to === 'group' ? -pid : pid, signal);
  process.kill(-pid, 'SIGCONT');
}

/** Whether any process of the group `pgid` lives (a learner that outlived its `toolrl train` would). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded as a hang guard) until no process of the group lives. */
export async function groupGone(pgid: number): Promise<void> {
  const until = Date.now() + HANG_MS;
  while (groupAlive(pgid)) {
    if (Date.now() > until) throw new Error(`processes of group ${pgid} outlived their toolrl train`);
    await sleep(POLL_MS);
  }
}

/** The run's files, read as they are on disk (a key that is not there yet reads as undefined). */
export class RunFiles {
  private readonly oldest = new Map<string, number>();
  constructor(readonly runDir: string) {}

  static of(workdir: string): RunFiles | undefined {
    const runs = join(workdir, 'runs');
    const [id] = existsSync(runs) ? readdirSync(runs) : [];
    return id ? new RunFiles(join(runs, id)) : undefined;
  }

  get runId(): string {
    return this.runDir.split('/').at(-1)!;
  }

  json<T = Record<string, unknown>>(rel: string): T | undefined {
    try {
      return JSON.parse(readFileSync(join(this.runDir, rel), 'utf8')) as T;
    } catch {
      return undefined; // absent, or caught mid-write
    }
  }

  text(rel: string): string {
    try {
      return readFileSync(join(this.runDir, rel), 'utf8');
    } catch {
      return '';
    }
  }

  /** LATEST.json's version, -1 before v0. */
  latest(): number {
    return this.json<{ version: number }>('policy/LATEST.json')?.version ?? -1;
  }

  /** The newest complete checkpoint's trainer state (step, policy_version, consumed ids, ...). */
  checkpoint(): Record<string, unknown> & { step: number; policy_version: number } {
    const dir = join(this.runDir, 'checkpoints');
    const steps = existsSync(dir)
      ? readdirSync(dir).filter((d) => existsSync(join(dir, d, 'COMPLETE.json')))
      : [];
    let best: (Record<string, unknown> & { step: number; policy_version: number }) | undefined;
    for (const d of steps) {
      const s = this.json<{
        trainerState: Record<string, unknown> & { step: number; policy_version: number };
      }>(`checkpoints/${d}/COMPLETE.json`)?.trainerState;
      if (s && (!best || s.step > best.step)) best = s;
    }
    return best ?? { step: -1, policy_version: -1 };
  }

  /** Versions the feeder has issued validation groups for whose summary is not written yet. */
  validationsInFlight(): number[] {
    const issued = this.json<{ evalVersions: number[] }>('feeder/state.json')?.evalVersions ?? [];
    return issued.filter((v) => !existsSync(join(this.runDir, 'metrics', 'eval', `v${v}.json`)));
  }

  /** The scored train groups so far, each with the version of its oldest sampled token (read once each). */
  trainGroups(): { groupId: string; oldest: number }[] {
    const dir = join(this.runDir, 'groups');
    for (const f of existsSync(dir) ? readdirSync(dir) : []) {
      if (!f.startsWith('e') || this.oldest.has(f)) continue;
      const g = this.json<{ trajectories: { policyVersions: number[]; lossMask: number[] }[] }>(
        `groups/${f}`,
      );
      if (!g) continue;
      const versions = g.trajectories.flatMap((t) => t.policyVersions.filter((_, i) => t.lossMask[i] === 1));
      this.oldest.set(f, Math.min(...versions));
    }
    return [...this.oldest].map(([f, oldest]) => ({ groupId: f.replace(/\.json$/, ''), oldest }));
  }

  status(): string | undefined {
    return this.json<{ status: string }>('run.json')?.status;
  }

  metricsRows(): Record<string, number | null>[] {
    return this.text('metrics/metrics.jsonl')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, number | null>);
  }

  evals(): Map<number, Record<string, unknown>> {
    const dir = join(this.runDir, 'metrics', 'eval');
    const out = new Map<number, Record<string, unknown>>();
    for (const f of existsSync(dir) ? readdirSync(dir) : []) {
      const m = /^v(\d+)\.json$/.exec(f);
      const s = m && this.json(`metrics/eval/${f}`);
      if (m && s) out.set(Number(m[1]), s);
    }
    return out;
  }
}

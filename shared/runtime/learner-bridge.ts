// The learner subprocess bridge (embedded mode): runs `python -m toolrl_learner stdio` for one run, feeds it the
// scored-groups queue, deletes a group's messages only when a `committed` line covers it, dead-letters
// groups it calls invalid, and turns its `published` / `committed` / `done` lines into the S3 notifications
// the bucket would send for LATEST.json and learner/state.json.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import type { Log } from '#shared/ports/log';
import { silentLog } from '#shared/ports/log';
import { ATTR, type Queue } from '#shared/ports/queue';
import { type LearnerOutputLine, LearnerOutputLineSchema } from '#shared/schemas/learner-stdio';
import { ScoredGroupMessageSchema } from '#shared/schemas/scored-group';
import { keys } from '#shared/topology';
import type { Notifier } from './notifications.ts';

export interface LearnerBridgeOptions {
  readonly python: string;
  /** Blob store root folder (the workdir). */
  readonly root: string;
  readonly runId: string;
  /**
   * Learner processes (`trainer.num_gpus`): above 1, or with `trainer.cpu_offload`, the learner runs under
   * torchrun (`python -m toolrl_learner launch`) as the FSDP2 sharded learner; rank 0 speaks this protocol.
   */
  readonly processes?: number;
  readonly sharded?: boolean;
  /** The learner's `--device` (cpu runs sharded ranks on gloo; default: its GPUs when it has them). */
  readonly device?: string;
  /** Learner scratch folder (model build, bundle staging). */
  readonly workdir?: string;
  readonly scoredGroups: Queue;
  readonly deadLetter: Queue;
  readonly notify: Notifier;
  /** The learner's stderr (its logs) goes here. */
  readonly logPath: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly log?: Log;
  readonly onLine?: (line: LearnerOutputLine) => void;
}

export interface LearnerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly done: boolean;
  readonly error: string | null;
}

/** How long a group handed to the learner stays invisible; released early when the learner exits. */
const HELD_VISIBILITY_SEC = 12 * 3600;

export class LearnerBridge {
  private child: ChildProcess | undefined;
  private readonly held = new Map<string, { handle: string; body: string }[]>();
  private readonly abort = new AbortController();
  private pump: Promise<void> | undefined;
  private logStream: WriteStream | undefined;
  private done = false;
  private error: string | null = null;
  private exited: Promise<LearnerExit> | undefined;
  private readonly log: Log;
  private lastStepMetrics: Record<string, number | null> = {};
  private terminating = false;
  private written = 0;
  /** `linesRead` of the learner's last `waiting` line, until it prints another kind of line. */
  private waitingAt: number | undefined;

  constructor(private readonly opts: LearnerBridgeOptions) {
    this.log = opts.log ?? silentLog;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The learner process's id while it runs (bench/embedded reads its CPU time from /proc). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Whether the learner computes nothing now: it said it was waiting and has been sent nothing since, or it is done
   * or gone. Its cores are then free for the rollouts (embedded.ts). A learner starts to wait 2 s after its last
   * line (gpu-worker/toolrl_learner/drivers/stdio.py), so it is counted busy for that long after a step.
   */
  get idle(): boolean {
    if (this.done || (this.child !== undefined && !this.running)) return true;
    return this.waitingAt !== undefined && this.waitingAt >= this.written;
  }

  /** Lines written to the learner's stdin so far (its `waiting` line says how many it had read). */
  get linesWritten(): number {
    return this.written;
  }

  get metrics(): Readonly<Record<string, number | null>> {
    return this.lastStepMetrics;
  }

  /** Starts the learner; resolves when the process has been spawned. `exit()` tells how it ended. */
  start(): void {
    if (this.child) return;
    const o = this.opts;
    const processes = o.processes ?? 1;
    const launch = processes > 1 || o.sharded ? ['launch', `--nproc-per-node=${processes}`] : [];
    const args = ['-m', 'toolrl_learner', ...launch, 'stdio', '--root', o.root, '--run-id', o.runId];
    if (o.workdir) args.push('--workdir', o.workdir);
    if (o.device) args.push('--device', o.device);
    this.logStream = createWriteStream(o.logPath, { flags: 'a' });
    const child = spawn(o.python, args, {
      cwd: o.cwd,
      env: { ...process.env, PYTHONUNBUFFERED: '1', ...o.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    // If this process exits without stopping the learner (a crash, a second Ctrl-C), take it down too: its
    // last committed checkpoint is what a resume starts from.
    const killOnExit = () => {
      if (this.running) child.kill('SIGKILL');
    };
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    child.stderr!.pipe(this.logStream);
    child.stdin!.on('error', () => {}); // EPIPE after the learner exits is reported through exit()
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.abort.abort();
        // Stopped cleanly (Ctrl-C: it checkpointed and exited 143) or done: the groups it held were not tried.
        const clean = code === 0 || (this.terminating && code === 143);
        void this.releaseHeld(clean).finally(() => {
          this.logStream?.end();
          resolve({ code, signal, done: this.done, error: this.error });
        });
      });
      child.on('error', (err) => {
        this.error = `cannot start the learner (${o.python}): ${err.message}`;
      });
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (raw) => {
      void this.onLine(raw).catch((err) =>
        this.log.error('learner line handling failed', { error: String(err) }),
      );
    });
  }

  /** Resolves when the learner process has exited (and held messages are released). */
  exit(): Promise<LearnerExit> {
    if (!this.exited) throw new Error('learner not started');
    return this.exited;
  }

  /** Ctrl-C: SIGTERM makes the learner finish its step, checkpoint and exit; SIGKILL after the grace period. */
  async terminate(graceMs = 60_000): Promise<LearnerExit> {
    const child = this.child;
    if (!child || !this.exited) throw new Error('learner not started');
    this.terminating = true;
    if (this.running) child.kill('SIGTERM');
    const timer = setTimeout(() => this.running && child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private async onLine(raw: string): Promise<void> {
    let line: LearnerOutputLine;
    try {
      line = LearnerOutputLineSchema.parse(JSON.parse(raw));
    } catch {
      this.log.warn('learner printed a non-protocol line on stdout', { line: raw.slice(0, 500) });
      return;
    }
    this.opts.onLine?.(line);
    this.waitingAt = line.type === 'waiting' ? line.linesRead : undefined;
    const { runId } = this.opts;
    switch (line.type) {
      case 'ready':
        this.log.info('learner ready', {
          policyVersion: line.policyVersion,
          resumedFromStep: line.resumedFromStep,
        });
        this.pump ??= this.pumpGroups();
        // A resumed run may have nothing in flight: wake the feeder as the state file's notification would.
        await this.opts.notify(keys.learnerState(runId));
        break;
      case 'published':
        await this.opts.notify(keys.policyLatest(runId));
        break;
      case 'step':
        this.lastStepMetrics = line.metrics;
        break;
      case 'committed':
        await this.settle(line.groupIds);
        break;
      case 'state':
        // learner/state.json was rewritten: the notification S3 sends for it on AWS.
        await this.opts.notify(keys.learnerState(runId));
        break;
      case 'dropped':
        if (line.reason === 'invalid') await this.deadLetter(line.groupId, line.message ?? 'invalid group');
        break;
      case 'done':
        this.done = true;
        await this.opts.notify(keys.learnerState(runId));
        break;
      case 'error':
        // The first error is the cause: a sharded learner's launcher adds one naming the failed ranks after it.
        this.error ??= line.message;
        this.log.error('learner error', { message: line.message });
        break;
    }
  }

  /** Moves scored-group messages to the learner's stdin as they arrive. */
  private async pumpGroups(): Promise<void> {
    const q = this.opts.scoredGroups;
    const signal = this.abort.signal;
    while (!signal.aborted && this.running) {
      let batch: Awaited<ReturnType<Queue['receive']>>;
      try {
        batch = await q.receive({
          maxMessages: 10,
          waitTimeSec: 20,
          visibilityTimeoutSec: HELD_VISIBILITY_SEC,
          signal,
        });
      } catch (err) {
        this.log.warn('scored-groups receive failed', { error: String(err) });
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      for (const m of batch) {
        let msg: ReturnType<typeof ScoredGroupMessageSchema.parse>;
        try {
          msg = ScoredGroupMessageSchema.parse(JSON.parse(m.body));
        } catch (err) {
          await this.opts.deadLetter.send(m.body, {
            attributes: {
              [ATTR.deadLetterReason]: `not a scored-group message: ${String(err).slice(0, 2000)}`,
              [ATTR.sourceQueue]: q.arn,
              [ATTR.receiveCount]: String(m.receiveCount),
            },
          });
          await q.delete(m.receiptHandle);
          continue;
        }
        const held = this.held.get(msg.groupId) ?? [];
        held.push({ handle: m.receiptHandle, body: m.body });
        this.held.set(msg.groupId, held);
        await this.write(`${JSON.stringify({ type: 'group', ...msg })}\n`);
      }
    }
  }

  private write(text: string): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) return Promise.resolve();
    this.written += text.split('\n').length - 1;
    return new Promise((resolve) => {
      if (stdin.write(text)) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  private async settle(groupIds: readonly string[]): Promise<void> {
    const handles = groupIds.flatMap((g) => (this.held.get(g) ?? []).map((h) => h.handle));
    for (const g of groupIds) this.held.delete(g);
    if (handles.length > 0) await this.opts.scoredGroups.deleteBatch(handles);
  }

  private async deadLetter(groupId: string, reason: string): Promise<void> {
    const held = this.held.get(groupId) ?? [];
    this.held.delete(groupId);
    for (const h of held) {
      await this.opts.deadLetter.send(h.body, {
        attributes: {
          [ATTR.deadLetterReason]: `learner: ${reason}`.slice(0, 4000),
          [ATTR.sourceQueue]: this.opts.scoredGroups.arn,
        },
      });
      await this.opts.scoredGroups.delete(h.handle);
    }
  }

  /**
   * Groups handed over but not committed become visible again for the next learner; after a clean stop their
   * receive is not counted (the embedded queue's returnUntried), so a run stopped and resumed many times never
   * dead-letters a group the learner held.
   */
  private async releaseHeld(clean: boolean): Promise<void> {
    const held = [...this.held.values()].flat();
    this.held.clear();
    const q = this.opts.scoredGroups;
    for (const h of held) {
      const back =
        clean && q instanceof EmbeddedQueue ? q.returnUntried(h.handle) : q.changeVisibility(h.handle, 0);
      await back.catch(() => {});
    }
  }
}

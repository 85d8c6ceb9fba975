// A long-lived Python process that runs user code (tool classes, reward functions): spawned on first use, driven
// over JSON lines (protocol.ts), restarted when it dies or stops answering. What it must hold to serve (the tool
// classes and reward functions loaded into it) is recorded as setup requests and sent again to every new process;
// a request in flight when the process goes is failed with an error that says so, never dropped.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { AnswerSchema, type HostErrorTypeSchema } from './protocol.ts';

/** Put on PYTHONPATH: the `toolrl_pyhost` package, read from the checkout (or the Lambda image's copy). */
export const PYHOST_PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'python');

/** The interpreter for user code: a configured one, else TOOLRL_PYTHON, else python3 on the PATH. */
export const defaultPython = (configured?: string): string =>
  configured ?? process.env.TOOLRL_PYTHON ?? 'python3';

export interface PythonHostOptions {
  /** Says whose host this is in every error (`the Python tool host`). */
  label: string;
  python?: string;
  /** Working directory and the first sys.path entry: the run's folder, where `my_tools.MyTool` is found. */
  baseDir: string;
  /** The environment the process gets (AWS_* variables are never passed on). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Seconds an instance may sit idle before the host releases it; the most it keeps live. */
  instanceTtlS?: number;
  maxInstances?: number;
  /** How much later than its own timeout an answer may come before the process is taken for stuck (ms). */
  graceMs?: number;
}

export type PythonHostErrorType = z.infer<typeof HostErrorTypeSchema> | 'host';

/** A failed request: the host's own error type, or `host` when the process died, hung or could not start. */
export class PythonHostError extends Error {
  override name = 'PythonHostError';
  constructor(
    readonly type: PythonHostErrorType,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  /** Bound on each call into user code, enforced by the host (seconds). */
  timeoutS?: number;
  /** How many such calls the request may make (a rebuild replays earlier calls): scales the stuck-process watchdog. */
  calls?: number;
  /** Aborting sends the host a cancel for this request. */
  signal?: AbortSignal;
}

interface Pending {
  proc: ChildProcessWithoutNullStreams;
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

const STDERR_TAIL = 4000;

export class PythonHost {
  private proc: ChildProcessWithoutNullStreams | null = null;
  private starting: Promise<ChildProcessWithoutNullStreams> | null = null;
  private readonly pending = new Map<number, Pending>();
  private readonly setups: { method: string; params: Record<string, unknown> }[] = [];
  private nextId = 1;
  private stderr = '';
  private closed = false;
  /** Processes started so far (the first is 1): a test reads it to see a restart. */
  starts = 0;

  constructor(readonly options: PythonHostOptions) {}

  get python(): string {
    return defaultPython(this.options.python);
  }

  /** A request that every process must have served before it serves others (loading a class, a function). */
  async setup(method: string, params: Record<string, unknown>): Promise<unknown> {
    const proc = await this.ready();
    const result = await this.send(proc, method, params, { timeoutS: 120 });
    this.setups.push({ method, params });
    return result;
  }

  async request(
    method: string,
    params: Record<string, unknown>,
    opts: RequestOptions = {},
  ): Promise<unknown> {
    const proc = await this.ready();
    return this.send(proc, method, params, opts);
  }

  private ready(): Promise<ChildProcessWithoutNullStreams> {
    if (this.closed) return Promise.reject(new PythonHostError('host', `${this.options.label} is closed`));
    // A process still loading its code serves nothing else yet.
    if (this.starting) return this.starting;
    if (this.proc) return Promise.resolve(this.proc);
    this.starting ??= this.start().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async start(): Promise<ChildProcessWithoutNullStreams> {
    const o = this.options;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.env ?? process.env))
      if (v !== undefined && !k.startsWith('AWS_')) env[k] = v;
    env.PYTHONPATH = [PYHOST_PACKAGE_DIR, o.baseDir, env.PYTHONPATH].filter(Boolean).join(delimiter);
    env.PYTHONUNBUFFERED = '1';
    const args = ['-m', 'toolrl_pyhost', '--ttl', String(o.instanceTtlS ?? 900)];
    args.push('--max-instances', String(o.maxInstances ?? 4096));
    const proc = spawn(this.python, args, { cwd: o.baseDir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.starts++;
    this.stderr = '';
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
    });
    createInterface({ input: proc.stdout }).on('line', (line) => this.onLine(proc, line));
    const gone = (why: string) => {
      if (this.proc === proc) this.proc = null;
      this.failAll(proc, `${o.label} (${this.python}) ${why}${this.stderrNote()}`);
    };
    proc.on('error', (err) => gone(`could not start: ${err.message}`));
    proc.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
    proc.stdin.on('error', () => {}); // a dead process is reported by 'exit'
    this.proc = proc;
    this.idle(true);
    // A new process holds nothing: load into it what the old one held before anything else is served.
    for (const s of this.setups) {
      try {
        await this.send(proc, s.method, s.params, { timeoutS: 120 });
      } catch (err) {
        this.kill(proc, `could not load its code again after a restart: ${(err as Error).message}`);
        throw err;
      }
    }
    return proc;
  }

  private stderrNote(): string {
    const tail = this.stderr.trim();
    return tail ? `; its stderr ends with: ${tail.slice(-1500)}` : '';
  }

  /** The process keeps Node alive only while a request waits on it. */
  private idle(idle: boolean): void {
    const p = this.proc;
    if (!p) return;
    for (const h of [p, p.stdout, p.stderr, p.stdin] as { ref?: () => void; unref?: () => void }[])
      idle ? h.unref?.() : h.ref?.();
  }

  private send(
    proc: ChildProcessWithoutNullStreams,
    method: string,
    params: Record<string, unknown>,
    opts: RequestOptions,
  ): Promise<unknown> {
    if (proc !== this.proc)
      return Promise.reject(new PythonHostError('host', `${this.options.label} was restarted`));
    const id = this.nextId++;
    const { timeoutS, signal } = opts;
    return new Promise((resolve, reject) => {
      if (signal?.aborted)
        return reject(new PythonHostError('timeout', 'the call was cancelled before it started'));
      let timer: NodeJS.Timeout | undefined;
      if (timeoutS !== undefined) {
        // The host cancels a late call itself; an answer later still than this means the process is stuck
        // (a coroutine that blocks its event loop, a C call that never returns): it is killed and restarted.
        const ms = timeoutS * 1000 * (opts.calls ?? 1) + (this.options.graceMs ?? 5000);
        timer = setTimeout(
          () => this.kill(proc, `did not answer ${method} within ${ms / 1000}s and was restarted`),
          ms,
        );
      }
      if (this.pending.size === 0) this.idle(false);
      this.pending.set(id, { proc, method, resolve, reject, timer });
      signal?.addEventListener(
        'abort',
        () => {
          if (this.pending.has(id) && this.proc === proc)
            proc.stdin.write(
              `${JSON.stringify({ id: this.nextId++, method: 'cancel', params: { target: id } })}\n`,
            );
        },
        { once: true },
      );
      proc.stdin.write(
        `${JSON.stringify({ id, method, params, ...(timeoutS !== undefined ? { timeout: timeoutS } : {}) })}\n`,
      );
    });
  }

  private onLine(proc: ChildProcessWithoutNullStreams, line: string): void {
    let answer: z.infer<typeof AnswerSchema>;
    try {
      answer = AnswerSchema.parse(JSON.parse(line));
    } catch (err) {
      this.kill(
        proc,
        `answered with a line that is not a protocol answer (${(err as Error).message.slice(0, 200)}): ${line.slice(0, 200)}`,
      );
      return;
    }
    const p = answer.id === null ? undefined : this.pending.get(answer.id);
    if (!p) return;
    this.settle(answer.id!);
    if (answer.ok) p.resolve(answer.result);
    else p.reject(new PythonHostError(answer.error.type, answer.error.message));
  }

  private settle(id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(id);
    if (this.pending.size === 0) this.idle(true);
  }

  /** Fails the requests in flight on `proc` (all of them when null). */
  private failAll(proc: ChildProcessWithoutNullStreams | null, message: string): void {
    for (const [id, p] of [...this.pending]) {
      if (proc !== null && p.proc !== proc) continue;
      this.settle(id);
      p.reject(new PythonHostError('host', `${message} while ${p.method} was in flight`));
    }
  }

  private kill(proc: ChildProcessWithoutNullStreams, why: string): void {
    if (this.proc === proc) this.proc = null;
    this.failAll(proc, `${this.options.label} ${why}`);
    proc.kill('SIGKILL');
  }

  /** Ends the process: EOF first (it releases every live instance), SIGKILL if it has not gone in 5 s. */
  async close(): Promise<void> {
    this.closed = true;
    await this.starting?.catch(() => {});
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    this.failAll(null, `${this.options.label} was closed`);
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.ref(); // keep Node alive until the process has gone
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
      proc.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      proc.stdin.end();
    });
  }
}

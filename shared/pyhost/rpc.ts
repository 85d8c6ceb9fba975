// The one client of a Python child process spoken to in JSON lines (python/toolrl_pyhost/rpc.py is its server):
// the Python host of user tools and rewards (host.ts) and BFCL's environment process (bfcl/client.ts) are both this.
//   request  {"id": 7, "method": "execute", "params": {…}, …extra fields}
//   answer   {"id": 7, "ok": true, "result": …}  or  {"id": 7, "ok": false, "error": {"type": "…", "message": "…"}}
// The process is spawned on first use, answers are matched by id (in any order), a request not answered by its
// deadline kills the process (the next request starts a new one), and a request in flight when the process goes is
// failed with an error that says so, never dropped. Setup requests (loading code into the process) are recorded and
// sent again, first, to every new process.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { z } from 'zod';

const AnswerSchema = z.discriminatedUnion('ok', [
  z.object({ id: z.number().nullable(), ok: z.literal(true), result: z.unknown() }),
  z.object({
    id: z.number().nullable(),
    ok: z.literal(false),
    error: z.object({ type: z.string(), message: z.string() }),
  }),
]);

export interface RpcProcessOptions {
  /** Names the process in every error (`the Python tool host`). */
  readonly label: string;
  readonly python: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  /** How long `close` waits for the process to leave after EOF before it kills it (ms). */
  readonly closeGraceMs?: number;
  /**
   * The error a failed request rejects with: `type` is the server's error type, or `process` when the process could
   * not start, died, hung or answered out of protocol.
   */
  readonly error: (type: string, message: string) => Error;
}

export interface CallOptions {
  /** A process that has not answered by then is taken for stuck: killed, and the request failed (ms). */
  readonly deadlineMs?: number;
  /** More fields of the request line (the Python host's `timeout`). */
  readonly fields?: Readonly<Record<string, unknown>>;
  /** Aborting sends the process `cancel {target: id}`. */
  readonly signal?: AbortSignal;
}

interface Pending {
  proc: ChildProcessWithoutNullStreams;
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

const STDERR_TAIL = 4000;

export class RpcProcess {
  private proc: ChildProcessWithoutNullStreams | null = null;
  private starting: Promise<ChildProcessWithoutNullStreams> | null = null;
  private readonly pending = new Map<number, Pending>();
  private readonly setups: { method: string; params: Record<string, unknown>; opts: CallOptions }[] = [];
  private nextId = 1;
  private stderr = '';
  /** Processes started so far (the first is 1): a test reads it to see a restart. */
  starts = 0;

  constructor(readonly options: RpcProcessOptions) {}

  /** A request that every process must have served before it serves others (loading a class, a function). */
  async setup(method: string, params: Record<string, unknown>, opts: CallOptions = {}): Promise<unknown> {
    const proc = await this.ready();
    const result = await this.send(proc, method, params, opts);
    this.setups.push({ method, params, opts });
    return result;
  }

  async call(method: string, params: Record<string, unknown>, opts: CallOptions = {}): Promise<unknown> {
    const proc = await this.ready();
    return this.send(proc, method, params, opts);
  }

  private ready(): Promise<ChildProcessWithoutNullStreams> {
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
    const proc = spawn(o.python, [...o.args], {
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      env: { ...o.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.starts++;
    this.stderr = '';
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
    });
    createInterface({ input: proc.stdout }).on('line', (line) => this.onLine(proc, line));
    const gone = (why: string) => {
      if (this.proc === proc) this.proc = null;
      this.failAll(proc, `${o.label} (${o.python}) ${why}${this.stderrNote()}`);
    };
    proc.on('error', (err) => gone(`could not start: ${err.message}`));
    proc.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
    proc.stdin.on('error', () => {}); // a dead process is reported by 'exit'
    this.proc = proc;
    this.idle(true);
    // A new process holds nothing: load into it what the old one held before anything else is served.
    for (const s of this.setups) {
      try {
        await this.send(proc, s.method, s.params, s.opts);
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
    opts: CallOptions,
  ): Promise<unknown> {
    const o = this.options;
    if (proc !== this.proc) return Promise.reject(o.error('process', `${o.label} was restarted`));
    const id = this.nextId++;
    const { deadlineMs, signal } = opts;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(o.error('timeout', 'the call was cancelled before it started'));
      const timer =
        deadlineMs === undefined
          ? undefined
          : setTimeout(
              () =>
                this.kill(proc, `did not answer ${method} within ${deadlineMs / 1000}s and was restarted`),
              deadlineMs,
            );
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
      proc.stdin.write(`${JSON.stringify({ id, method, params, ...opts.fields })}\n`);
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
    else p.reject(this.options.error(answer.error.type, answer.error.message));
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
      p.reject(this.options.error('process', `${message} while ${p.method} was in flight`));
    }
  }

  private kill(proc: ChildProcessWithoutNullStreams, why: string): void {
    if (this.proc === proc) this.proc = null;
    this.failAll(proc, `${this.options.label} ${why}`);
    proc.kill('SIGKILL');
  }

  /** Ends the process: EOF first (the server returns), SIGKILL if it has not gone in time. A later call starts anew. */
  async close(): Promise<void> {
    await this.starting?.catch(() => {});
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    this.failAll(null, `${this.options.label} was closed`);
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.ref(); // keep Node alive until the process has gone
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => proc.kill('SIGKILL'), this.options.closeGraceMs ?? 5000);
      proc.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      proc.stdin.end();
    });
  }
}

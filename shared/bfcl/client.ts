// The client of the BFCL environment process: spawns `python -m toolrl_bfcl serve`, sends JSON-lines requests and
// matches answers by id. A process that dies or stops answering is killed and started again on the next
// request: nothing is lost, because every state is rebuilt from the calls the request carries.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { delimiter } from 'node:path';
import { createInterface } from 'node:readline';
import type { z } from 'zod';
import { processEnvForTool } from '#shared/tools/secrets';
import { BFCL_PACKAGE_DIR, bfclPython } from './env.ts';
import {
  AnswerSchema,
  type BfclCall,
  type BfclEntry,
  ExecuteResultSchema,
  type Hello,
  HelloSchema,
  ParseResultSchema,
  type ScoreResult,
  ScoreResultSchema,
  StateResultSchema,
  type Stats,
  StatsSchema,
} from './protocol.ts';

export interface BfclEnvOptions {
  /** Interpreter with bfcl-eval installed (default: see bfclPython). */
  python?: string;
  /** Live states each process keeps between calls (0: every call replays from initial_config). */
  cacheStates?: number;
  /** Processes to spread entries over (an entry always goes to the same one, so its states stay warm). */
  processes?: number;
  /** A request not answered by then kills the process (default 120 s). */
  requestTimeoutMs?: number;
}

/** The process refused a request (`bad_request`), failed inside BFCL (`internal`), died or timed out. */
export class BfclEnvError extends Error {
  override name = 'BfclEnvError';
  constructor(
    readonly type: 'bad_request' | 'internal' | 'process',
    message: string,
  ) {
    super(message);
  }
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

const STDERR_TAIL = 4000;

class Worker {
  private proc: ChildProcessWithoutNullStreams | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderr = '';

  constructor(
    private readonly python: string,
    private readonly cacheStates: number,
    private readonly timeoutMs: number,
  ) {}

  private start(): ChildProcessWithoutNullStreams {
    // the process runs the model's calls against BFCL's classes: it gets no AWS credentials or tool secrets
    const env = {
      ...processEnvForTool(),
      PYTHONPATH: [BFCL_PACKAGE_DIR, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
      PYTHONUNBUFFERED: '1',
    };
    const proc = spawn(
      this.python,
      ['-m', 'toolrl_bfcl', 'serve', '--cache-states', String(this.cacheStates)],
      {
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.stderr = '';
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
    });
    createInterface({ input: proc.stdout }).on('line', (line) => this.onLine(line));
    const gone = (why: string) => {
      if (this.proc !== proc) return;
      this.proc = null;
      this.failAll(`the BFCL environment process ${why}${this.stderr ? `: ${this.stderr.trim()}` : ''}`);
    };
    proc.on('error', (err) => gone(`could not start (${this.python}): ${err.message}`));
    proc.on('exit', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
    proc.stdin.on('error', () => {}); // a dead process is reported by 'exit'
    this.proc = proc;
    this.idle(true);
    return proc;
  }

  /** The process keeps Node alive only while a request waits on it. */
  private idle(idle: boolean): void {
    const p = this.proc;
    if (!p) return;
    for (const h of [p, p.stdout, p.stderr, p.stdin] as { ref?: () => void; unref?: () => void }[])
      idle ? h.unref?.() : h.ref?.();
  }

  private onLine(line: string): void {
    let answer: z.infer<typeof AnswerSchema>;
    try {
      answer = AnswerSchema.parse(JSON.parse(line));
    } catch (err) {
      this.kill(
        `answered with a line that is not a protocol answer (${(err as Error).message}): ${line.slice(0, 200)}`,
      );
      return;
    }
    const p = answer.id === null ? undefined : this.pending.get(answer.id);
    if (!p) return;
    this.settle(answer.id!);
    if (answer.ok) p.resolve(answer.result);
    else p.reject(new BfclEnvError(answer.error.type, answer.error.message));
  }

  private settle(id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(id);
    if (this.pending.size === 0) this.idle(true);
  }

  private failAll(message: string): void {
    for (const [id, p] of [...this.pending]) {
      this.settle(id);
      p.reject(new BfclEnvError('process', message));
    }
  }

  private kill(why: string): void {
    const proc = this.proc;
    this.proc = null;
    this.failAll(`the BFCL environment process ${why}`);
    proc?.kill('SIGKILL');
  }

  request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const proc = this.proc ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => this.kill(`did not answer ${method} within ${this.timeoutMs / 1000}s and was restarted`),
        this.timeoutMs,
      );
      if (this.pending.size === 0) this.idle(false);
      this.pending.set(id, { resolve, reject, timer });
      proc.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
    });
  }

  async close(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    this.failAll('was closed');
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.ref(); // keep Node alive until the process has gone
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => proc.kill('SIGKILL'), 2000);
      proc.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      proc.stdin.end(); // EOF: the server returns
    });
  }
}

/** BFCL's environments and checker, in one or more Python processes. */
export class BfclEnv {
  private readonly workers: Worker[];

  constructor(readonly options: BfclEnvOptions = {}) {
    const n = Math.max(1, options.processes ?? 1);
    const python = bfclPython(options.python);
    this.workers = Array.from(
      { length: n },
      () => new Worker(python, options.cacheStates ?? 256, options.requestTimeoutMs ?? 120_000),
    );
  }

  private worker(entryId: string): Worker {
    let h = 0;
    for (let i = 0; i < entryId.length; i++) h = (h * 31 + entryId.charCodeAt(i)) >>> 0;
    return this.workers[h % this.workers.length]!;
  }

  private async ask<S extends z.ZodType>(
    schema: S,
    method: string,
    params: Record<string, unknown>,
    entryId = '',
  ): Promise<z.infer<S>> {
    const raw = await this.worker(entryId).request(method, params);
    const r = schema.safeParse(raw);
    if (!r.success) throw new BfclEnvError('internal', `${method}: unexpected answer: ${r.error.message}`);
    return r.data;
  }

  /** Versions and the classes offered; starts the process (use it to fail early). */
  hello(): Promise<Hello> {
    return this.ask(HelloSchema, 'hello', {});
  }

  /** Runs `calls` in the state after `history` (the trajectory's earlier calls, in order). */
  async execute(
    entry: BfclEntry,
    history: readonly BfclCall[],
    calls: readonly BfclCall[],
    opts: { useCache?: boolean } = {},
  ): Promise<{ output: string; raised: boolean }[]> {
    const params = { entry, history, calls, useCache: opts.useCache ?? true };
    return (await this.ask(ExecuteResultSchema, 'execute', params, entry.id)).results;
  }

  /** The instances' public state after `history`: rebuilt by replay, or the kept live one with `useCache`. */
  async state(
    entry: BfclEntry,
    history: readonly BfclCall[],
    opts: { useCache?: boolean } = {},
  ): Promise<Record<string, unknown>> {
    const params = { entry, history, useCache: opts.useCache ?? false };
    return (await this.ask(StateResultSchema, 'state', params, entry.id)).state;
  }

  /** BFCL's checks per user turn and overall. `modelTurns`: per user turn, per assistant turn, its calls. */
  score(
    entry: BfclEntry,
    groundTruth: readonly (readonly string[])[],
    modelTurns: readonly (readonly (readonly BfclCall[])[])[],
    forceTerminated: boolean,
  ): Promise<ScoreResult> {
    return this.ask(
      ScoreResultSchema,
      'score',
      { entry, groundTruth, modelTurns, forceTerminated },
      entry.id,
    );
  }

  /** Ground-truth call strings (`sort('a.pdf')`) as JSON calls, positional arguments named. */
  async parse(entry: BfclEntry, calls: readonly string[]): Promise<BfclCall[]> {
    return (await this.ask(ParseResultSchema, 'parse', { entry, calls }, entry.id)).calls;
  }

  /** Summed over processes. */
  async stats(): Promise<Stats> {
    const all = await Promise.all(this.workers.map((w) => w.request('stats', {})));
    const total: Stats = { replays: 0, continued: 0, replayedCalls: 0, calls: 0, live: 0 };
    for (const s of all.map((a) => StatsSchema.parse(a)))
      for (const k of Object.keys(total) as (keyof Stats)[]) total[k] += s[k];
    return total;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
  }
}

const shared = new Map<string, BfclEnv>();

/** One environment per process and option set, shared by the tool kind and the reward. */
export function sharedBfclEnv(options: BfclEnvOptions = {}): BfclEnv {
  const key = JSON.stringify([bfclPython(options.python), options.cacheStates, options.processes]);
  let env = shared.get(key);
  if (!env) {
    env = new BfclEnv(options);
    shared.set(key, env);
  }
  return env;
}

export async function closeSharedBfclEnvs(): Promise<void> {
  const all = [...shared.values()];
  shared.clear();
  await Promise.all(all.map((e) => e.close()));
}

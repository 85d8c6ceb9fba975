// The client of the BFCL environment process (`python -m toolrl_bfcl serve`) over the JSON-lines RPC
// (shared/pyhost/rpc.ts). A process that dies or stops answering is killed and started again on the next request:
// nothing is lost, because every state is rebuilt from the calls the request carries.
import { delimiter } from 'node:path';
import type { z } from 'zod';
import { PYHOST_PACKAGE_DIR } from '#shared/pyhost/host';
import { RpcProcess } from '#shared/pyhost/rpc';
import { processEnvForTool } from '#shared/tools/secrets';
import { BFCL_PACKAGE_DIR, bfclPython } from './env.ts';
import {
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

/** One `python -m toolrl_bfcl serve` process, started again on the next request when it dies or hangs. */
function bfclProcess(python: string, cacheStates: number): RpcProcess {
  return new RpcProcess({
    label: 'the BFCL environment process',
    python,
    args: ['-m', 'toolrl_bfcl', 'serve', '--cache-states', String(cacheStates)],
    // The process runs the model's calls against BFCL's classes: it gets no AWS credentials or tool secrets. Its
    // server is the Python host's JSON-lines loop (toolrl_pyhost.rpc).
    env: {
      ...processEnvForTool(),
      PYTHONPATH: [BFCL_PACKAGE_DIR, PYHOST_PACKAGE_DIR, process.env.PYTHONPATH]
        .filter(Boolean)
        .join(delimiter),
      PYTHONUNBUFFERED: '1',
    },
    closeGraceMs: 2000,
    error: (type, message) =>
      new BfclEnvError(type === 'bad_request' || type === 'internal' ? type : 'process', message),
  });
}

/** BFCL's environments and checker, in one or more Python processes. */
export class BfclEnv {
  private readonly workers: RpcProcess[];
  private readonly deadlineMs: number;

  constructor(readonly options: BfclEnvOptions = {}) {
    const n = Math.max(1, options.processes ?? 1);
    const python = bfclPython(options.python);
    this.workers = Array.from({ length: n }, () => bfclProcess(python, options.cacheStates ?? 256));
    this.deadlineMs = options.requestTimeoutMs ?? 120_000;
  }

  private worker(entryId: string): RpcProcess {
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
    const raw = await this.worker(entryId).call(method, params, { deadlineMs: this.deadlineMs });
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
    const all = await Promise.all(
      this.workers.map((w) => w.call('stats', {}, { deadlineMs: this.deadlineMs })),
    );
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

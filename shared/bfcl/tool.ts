// `bfcl`: the functions of a BFCL multi-turn entry's classes (file system, messaging, tickets, trading, travel,
// vehicle, math, posting), executed by BFCL's own environments in the Python process. The schemas come from the
// row (`extra_info.tools`, plus held-out functions once revealed: see shared/episode/user-turns.ts); the state is
// the entry's `initial_config` with the trajectory's earlier calls replayed (`RowTools.history`), so any process
// can serve any call. Calls of one turn run in the order the model wrote them, each seeing the ones before.
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import type { ToolSchema } from '#shared/schemas/chat';
import { defineToolKind, type RowTools } from '#shared/tools/kind';
import { type Tool, ToolFailure } from '#shared/tools/types';
import { type BfclEnv, BfclEnvError, sharedBfclEnv } from './client.ts';
import { bfclEntryOf } from './entry.ts';
import { ensureBfclEnv } from './env.ts';
import type { BfclCall, BfclEntry } from './protocol.ts';
import { executedCalls } from './trajectory.ts';

/** How BFCL's executor prefixes the output of a call that raised (python/toolrl_bfcl/envs.py). */
const RAISED_PREFIX = 'Error during execution: ';

const Config = z.object({
  /** A Python with bfcl-eval installed; default `TOOLRL_BFCL_PYTHON` or the environment `toolrl bfcl setup` makes. */
  python: z.string().optional(),
  /** Live states kept per process so a trajectory's next call continues them (0: replay every call). */
  cache_states: z.number().int().nonnegative().default(256),
  /** Environment processes (an entry always maps to the same one). */
  processes: z.number().int().positive().default(1),
});

export const bfclKind = defineToolKind({
  kind: 'bfcl',
  // Calls of one trajectory are ordered by the session below, not by the worker pool.
  defaults: { timeoutS: 60, numWorkers: 64 },
  config: Config,
  build: (options, { env: toolEnv }) => {
    const python = options.python
      ? isAbsolute(options.python) || !options.python.includes('/')
        ? options.python
        : resolve(toolEnv.baseDir, options.python)
      : undefined;
    // Started on the first call, not here: the rollout stage builds this registry only to render the row's tool
    // schemas, and needs no Python for that.
    let started: Promise<BfclEnv> | null = null;
    const env = (): Promise<BfclEnv> =>
      (started ??= (async () => {
        await ensureBfclEnv({ python });
        const bfcl = sharedBfclEnv({
          python,
          cacheStates: options.cache_states,
          processes: options.processes,
        });
        await bfcl.hello();
        return bfcl;
      })().catch((err) => {
        started = null; // the next call tries again
        throw new ToolFailure(
          'internal_error',
          `the BFCL environment did not start: ${(err as Error).message}`,
        );
      }));
    // One session per registry view (`forRow` passes the same RowTools object for each of its tools).
    const sessions = new WeakMap<RowTools, Session>();
    return {
      tools: [],
      rowTool: (schema: ToolSchema, row: RowTools) => {
        let session = sessions.get(row);
        if (!session) {
          session = new Session(env, row);
          sessions.set(row, session);
        }
        return session.tool(schema);
      },
    };
  },
});

/** The environment of one trajectory for one batch of calls. */
class Session {
  private readonly entry: BfclEntry | Error;
  /** Calls the model saw results of, in order: the state is these replayed on initial_config. */
  private readonly executed: BfclCall[];
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly env: () => Promise<BfclEnv>,
    row: RowTools,
  ) {
    const functions = new Set((row.tools ?? []).map((t) => t.function.name));
    this.executed = executedCalls(row.history ?? [], functions);
    try {
      this.entry = bfclEntryOf(row.extraInfo);
    } catch (err) {
      this.entry = err as Error;
    }
  }

  tool(schema: ToolSchema): Tool {
    const name = schema.function.name;
    return {
      schema,
      execute: (args, ctx) => {
        const run = this.queue.then(() => this.call(name, args, ctx.signal));
        this.queue = run.catch(() => {});
        return run;
      },
    };
  }

  private async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    if (this.entry instanceof Error) throw new ToolFailure('internal_error', this.entry.message);
    if (signal.aborted) throw new ToolFailure('timeout', 'the call was cancelled before it ran');
    const env = await this.env();
    let result: { output: string; raised: boolean };
    try {
      [result] = (await env.execute(this.entry, this.executed, [{ name, arguments: args }])) as [
        { output: string; raised: boolean },
      ];
    } catch (err) {
      if (err instanceof BfclEnvError && err.type === 'bad_request')
        throw new ToolFailure('invalid_arguments', err.message);
      throw new ToolFailure('internal_error', (err as Error).message);
    }
    // A call the registry gave up on (timeout) is reported as not run, so it must not count as run here either.
    if (!signal.aborted) this.executed.push({ name, arguments: args });
    if (result.raised) throw new ToolFailure('execution_error', result.output.slice(RAISED_PREFIX.length));
    return result.output;
  }
}

// The tool registry: builds tools from a tool config (or the defaults), validates arguments, applies
// each tool's limits and truncation, and turns every failure into a ToolResult. `call` never throws.
import { resolve } from 'node:path';
import type { PythonHost } from '#shared/pyhost/host';
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolConfigFile, ToolsConfig } from '#shared/schemas/config/tools';
import type { ToolCall, ToolResult } from '#shared/schemas/tool-result';
import { type OwnTimeout, parseToolConfig, parseToolLimits, type ToolLimits } from './config.ts';
import type { BuiltTools, RowTools } from './kind.ts';
import { toolSource } from './kinds.ts';
import { RateLimiter, Semaphore, withTimeout } from './limits.ts';
import { toolEnvironment } from './secrets.ts';
import { toolSpecsAndDir } from './specs.ts';
import { type TruncateSide, truncateToolOutput } from './truncate.ts';
import { type Tool, type ToolEnv, ToolFailure, type ToolOutput, type TrajectoryContext } from './types.ts';
import { type ArgumentValidator, compileArgumentValidator } from './validate.ts';

export interface CallContext {
  signal?: AbortSignal;
}

export interface ToolRegistry {
  /** OpenAI function schemas, in config order: what the chat template renders. */
  schemas(): ToolSchema[];
  names(): string[];
  /** Runs one call; every failure is `{ok: false, error}`, never an exception. */
  call(call: ToolCall, ctx?: CallContext): Promise<ToolResult>;
  /** Runs calls concurrently within each tool's `num_workers`, `rate_limit` and `calls_per_second`; results in call order. */
  callMany(calls: ToolCall[], ctx?: CallContext): Promise<ToolResult[]>;
  /**
   * A view that adds the tools a dataset row brings (ToolBench), sharing this registry's limits; with a
   * `trajectoryId`, tools with per-trajectory state (Python tools) are bound to that trajectory.
   */
  forRow(row: RowTools): ToolRegistry;
  /**
   * Ends a trajectory (`row.trajectoryId`) for every stateful tool it called: each one's final reward (verl's
   * calc_reward), then its state released. A tool that fails here is reported in `errors`, never thrown.
   */
  finishTrajectory(row: RowTools): Promise<TrajectoryEnd>;
  /** Whether some tool keeps per-trajectory state (finishTrajectory has work to do). */
  readonly stateful: boolean;
  /** Stops workers, in-process servers and running sandboxes. */
  close(): Promise<void>;
}

export interface TrajectoryEnd {
  /** Final reward per tool name (tools that have one). */
  rewards: Record<string, number>;
  errors: { tool: string; message: string }[];
}

export interface BuildOptions {
  /** Resolves `config_file` and relative paths inside tool configs; defaults to the cwd. */
  baseDir?: string;
  clock?: () => Date;
  /**
   * The environment tool credentials come from; defaults to process.env. Tools see only the names its
   * TOOLRL_TOOL_SECRETS lists, never `AWS_*` (secrets.ts).
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** `max_tool_response_length` and `tool_response_truncate_side`; counts tokens when `countTokens` is given. */
  truncate?: { maxLength: number; side: TruncateSide; countTokens?: (s: string) => number };
}

/** Error messages are cut to this many characters: they are read by the model too. */
const MAX_ERROR_MESSAGE = 2000;

/** How a tool's calls are held back: its own workers, the `rate_limit` cap (maybe shared) and a rate bucket. */
interface Throttle {
  limits: ToolLimits;
  semaphore: Semaphore;
  cap: Semaphore | null;
  limiter: RateLimiter | null;
}

interface Entry extends Throttle {
  tool: Tool;
  validate: ArgumentValidator;
}

interface RowFactory extends Throttle {
  build: (schema: ToolSchema, row: RowTools) => Tool;
}

export async function buildToolRegistry(
  spec?: ToolsConfig | ToolConfigFile,
  opts: BuildOptions = {},
): Promise<ToolRegistry> {
  const pythonConfig = spec && 'python' in spec ? spec.python : undefined;
  const { specs, baseDir } = toolSpecsAndDir(spec, resolve(opts.baseDir ?? process.cwd()));
  const visible = toolEnvironment(opts.env ?? process.env);
  const env: ToolEnv = {
    baseDir,
    clock: opts.clock ?? (() => new Date()),
    env: visible.env,
    allowedSecrets: visible.allowed,
  };
  const entries = new Map<string, Entry>();
  const owned: Tool[] = [];
  let rowFactory: RowFactory | null = null;
  // One Python host serves every Python tool of the registry; it lives until the registry closes.
  let host: PythonHost | undefined;
  const closeHost = async () => host?.close();
  try {
    for (const [index, s] of specs.entries()) {
      const source = toolSource(s);
      let label: string;
      let limits: ToolLimits;
      let built: BuiltTools;
      if (source.type === 'builtin') {
        const { kind } = source;
        const parsed = parseToolConfig(
          kind.kind,
          s.config,
          kind.config,
          kind.defaults,
          kind.ownTimeout as OwnTimeout | undefined,
        );
        label = kind.kind;
        limits = parsed.limits;
        built = await kind.build(parsed.options, { env, limits });
      } else if (source.type === 'python') {
        const { PYTHON_TOOL_DEFAULTS, buildPythonTool, pythonToolHost } = await import('./python/tool.ts');
        label = source.label;
        // The class gets its whole `config` (verl's `type: native` and the limits included), as verl gives it.
        limits = parseToolLimits(label, s.config, PYTHON_TOOL_DEFAULTS);
        host ??= pythonToolHost(env, pythonConfig);
        built = { tools: [await buildPythonTool(s, `t${index}`, host, env, limits.timeoutMs)] };
      } else {
        const { loadToolModule, MODULE_TOOL_DEFAULTS } = await import('./module.ts');
        label = source.module;
        limits = parseToolLimits(label, s.config, MODULE_TOOL_DEFAULTS);
        built = { tools: await loadToolModule(source.module, s.config, env) };
      }
      owned.push(...built.tools);
      if (s.tool_schema && built.tools.length !== 1)
        throw new Error(`tool ${label}: tool_schema applies to a kind that builds exactly one tool`);
      const throttle: Throttle = {
        limits,
        semaphore: new Semaphore(limits.numWorkers),
        ...sharedLimits(label, built.tools, limits),
      };
      for (const built1 of built.tools) {
        // A Python class was given the tool_schema itself and reports the schema it keeps.
        const tool = s.tool_schema && source.type !== 'python' ? withSchema(built1, s.tool_schema) : built1;
        const toolName = tool.schema.function.name;
        if (entries.has(toolName)) throw new Error(`two tools are named ${toolName}; names must be unique`);
        const validate = compileArgumentValidator(toolName, tool.schema.function.parameters);
        entries.set(toolName, { tool, validate, ...throttle });
      }
      if (built.rowTool) rowFactory = { build: built.rowTool, ...throttle };
    }
  } catch (err) {
    await Promise.allSettled([...owned.map((t) => t.close?.()), closeHost()]);
    throw err;
  }
  const closeAll = async () => {
    await Promise.allSettled([...owned.map((t) => t.close?.()), closeHost()]);
  };
  return makeRegistry(entries, rowFactory, env, opts, closeAll);
}

function makeRegistry(
  entries: Map<string, Entry>,
  rowFactory: RowFactory | null,
  env: ToolEnv,
  opts: BuildOptions,
  closeAll: () => Promise<void>,
): ToolRegistry {
  const finish = (output: string | ToolOutput, failure: ToolFailure | null): ToolResult => {
    const out = typeof output === 'string' ? { text: output } : output;
    const cut = opts.truncate
      ? truncateToolOutput(out.text, opts.truncate.maxLength, opts.truncate.side, opts.truncate.countTokens)
      : { text: out.text, truncated: false };
    if (!failure)
      return {
        ok: true,
        output: cut.text,
        error: null,
        truncated: cut.truncated,
        ...(out.reward !== undefined ? { reward: out.reward } : {}),
        ...(out.metrics !== undefined ? { metrics: out.metrics } : {}),
      };
    const message =
      failure.message.length > MAX_ERROR_MESSAGE
        ? `${failure.message.slice(0, MAX_ERROR_MESSAGE)}…`
        : failure.message;
    return { ok: false, output: cut.text, error: { type: failure.type, message }, truncated: cut.truncated };
  };

  const run = async (entry: Entry, rawArgs: unknown, ctx: CallContext): Promise<string | ToolOutput> => {
    const args = entry.validate(rawArgs);
    const timeoutMs = entry.limits.timeoutMs;
    if (entry.limiter) await entry.limiter.acquire(Date.now() + timeoutMs, ctx.signal);
    // The timeout starts once a slot is held: waiting behind `num_workers` or `rate_limit` is not the tool's fault.
    const execute = () =>
      entry.semaphore.run(() =>
        entry.tool.ownsTimeout
          ? entry.tool.execute(args, { signal: ctx.signal ?? NEVER, clock: env.clock, timeoutMs })
          : withTimeout(timeoutMs, ctx.signal, (signal) =>
              entry.tool.execute(args, { signal, clock: env.clock, timeoutMs }),
            ),
      );
    return entry.cap ? entry.cap.run(execute) : execute();
  };
  const stateful = [...entries.values()].some((e) => e.tool.forTrajectory !== undefined);

  const registry: ToolRegistry = {
    schemas: () => [...entries.values()].map((e) => e.tool.schema),
    names: () => [...entries.keys()],
    async call(call, ctx = {}) {
      try {
        const name = typeof call?.name === 'string' ? call.name : '';
        const entry = entries.get(name);
        if (!entry) {
          const known = [...entries.keys()].join(', ') || '(none)';
          throw new ToolFailure(
            'unknown_tool',
            `unknown tool "${name.slice(0, 200)}"; available tools: ${known}`,
          );
        }
        return finish(await run(entry, call.arguments, ctx), null);
      } catch (err) {
        if (err instanceof ToolFailure) return finish(err.output, err);
        return finish('', new ToolFailure('internal_error', (err as Error)?.message ?? String(err)));
      }
    },
    callMany(calls, ctx) {
      return Promise.all(calls.map((c) => registry.call(c, ctx)));
    },
    stateful,
    forRow(row) {
      const bind = stateful && row.trajectoryId !== undefined;
      if (!row.tools?.length && !bind) return registry;
      const extended = new Map(entries);
      if (bind) {
        const t = trajectoryOf(row);
        for (const [name, e] of entries)
          if (e.tool.forTrajectory) extended.set(name, { ...e, tool: e.tool.forTrajectory(t) });
      }
      for (const schema of row.tools ?? []) {
        const name = schema.function.name;
        if (extended.has(name)) continue; // a configured tool (e.g. Finish) wins over the row's copy
        if (!rowFactory) {
          extended.set(name, unavailableRowTool(schema));
          continue;
        }
        const tool = rowFactory.build(schema, row);
        let validate: ArgumentValidator;
        try {
          validate = compileArgumentValidator(name, schema.function.parameters);
        } catch (err) {
          // A row's broken schema must not sink the batch: the tool stays visible and reports it.
          const message = (err as Error).message;
          validate = () => {
            throw new ToolFailure('invalid_arguments', message);
          };
        }
        extended.set(name, { tool, validate, ...rowFactory });
      }
      return makeRegistry(extended, rowFactory, env, opts, async () => {});
    },
    async finishTrajectory(row) {
      const end: TrajectoryEnd = { rewards: {}, errors: [] };
      if (!stateful || row.trajectoryId === undefined) return end;
      const t = trajectoryOf(row);
      const called = new Set(t.history.map((c) => c.name));
      await Promise.all(
        [...entries].map(async ([name, e]) => {
          if (!e.tool.finishTrajectory || !called.has(name)) return;
          try {
            const reward = await e.tool.finishTrajectory(t);
            if (reward !== null) end.rewards[name] = reward;
          } catch (err) {
            end.errors.push({ tool: name, message: (err as Error).message.slice(0, MAX_ERROR_MESSAGE) });
          }
        }),
      );
      return end;
    },
    close: closeAll,
  };
  return registry;
}

/** The signal of a call nobody can cancel. */
const NEVER = new AbortController().signal;

const trajectoryOf = (row: RowTools): TrajectoryContext => ({
  id: row.trajectoryId!,
  extraInfo: row.extraInfo ?? {},
  history: row.history ?? [],
});

/** Caps and buckets of `enable_global_rate_limit` tools, shared by every registry of the process. */
const globalCaps = new Map<string, Semaphore>();
const globalLimiters = new Map<string, RateLimiter>();

/** The spec's `rate_limit` cap and `calls_per_second` bucket: its own, or the process-wide ones of the same tool. */
function sharedLimits(
  kind: string,
  tools: readonly Tool[],
  limits: ToolLimits,
): { cap: Semaphore | null; limiter: RateLimiter | null } {
  // The same tool: its kind and the names it offers (two http tools at different URLs have different names).
  const names = tools.map((t) => t.schema.function.name).sort();
  const shared = <T>(pool: Map<string, T>, value: number | null, make: (v: number) => T): T | null => {
    if (value === null) return null;
    if (!limits.globalRateLimit) return make(value);
    const key = JSON.stringify([kind, names, value]);
    let found = pool.get(key);
    if (found === undefined) {
      found = make(value);
      pool.set(key, found);
    }
    return found;
  };
  return {
    cap: shared(globalCaps, limits.concurrencyCap, (n) => new Semaphore(n)),
    limiter: shared(globalLimiters, limits.callsPerSecond, (r) => new RateLimiter(r)),
  };
}

/** The tool under a schema from the config; a stateful tool's trajectory views keep that schema too. */
function withSchema(tool: Tool, schema: ToolSchema): Tool {
  return {
    schema,
    execute: (a, c) => tool.execute(a, c),
    close: tool.close?.bind(tool),
    ...(tool.ownsTimeout ? { ownsTimeout: true } : {}),
    ...(tool.forTrajectory
      ? { forTrajectory: (t: TrajectoryContext) => withSchema(tool.forTrajectory!(t), schema) }
      : {}),
    ...(tool.finishTrajectory ? { finishTrajectory: tool.finishTrajectory.bind(tool) } : {}),
  };
}

function unavailableRowTool(schema: ToolSchema): Entry {
  const name = schema.function.name;
  return {
    tool: {
      schema,
      execute: async () => {
        throw new ToolFailure(
          'unknown_tool',
          `tool "${name}" comes from the dataset row but no toolbench service is configured`,
        );
      },
    },
    validate: (a) => (a && typeof a === 'object' ? (a as Record<string, unknown>) : {}),
    limits: {
      timeoutMs: 1000,
      numWorkers: 1,
      concurrencyCap: null,
      callsPerSecond: null,
      globalRateLimit: false,
      maxRetries: 0,
      retryBaseMs: 0,
    },
    semaphore: new Semaphore(1),
    cap: null,
    limiter: null,
  };
}

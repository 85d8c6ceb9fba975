// Python tools: a tool config entry naming a Python class (`class_name: my_pkg.tools.MyTool`, or `path:
// tools/my_tool.py` + `name: MyTool`) runs in the Python tool host (shared/pyhost), one per registry. The class is
// built with its `config` and `tool_schema` as verl builds a BaseTool; per trajectory the host drives create
// (with the row's `extra_info.tools_kwargs.<tool>.create_kwargs`), execute, calc_reward and release.
//
// A trajectory's instance lives in the host that created it. A call that reaches a host without it (the host
// restarted, or on AWS another container served the earlier calls) rebuilds it there: create, then the
// trajectory's earlier executed calls to the tool replayed in order. Tools whose execute acts on the outside
// world should therefore be idempotent per trajectory, as BFCL's environments are.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { basename, isAbsolute, resolve } from 'node:path';
import { type ToolSchema, ToolSchemaSchema } from '#shared/schemas/chat';
import type { PythonHostConfig, ToolSpec } from '#shared/schemas/config/tools';
import type { ToolCallRecord } from '#shared/schemas/tool-result';
import { PythonHost, PythonHostError } from '../../pyhost/host.ts';
import { CalcRewardResultSchema, ExecuteResultSchema, LoadToolResultSchema } from '../../pyhost/protocol.ts';
import {
  type Tool,
  type ToolContext,
  type ToolEnv,
  ToolFailure,
  type ToolOutput,
  type TrajectoryContext,
} from '../types.ts';

/** The limits of a Python tool unless its config sets them (`timeout`, `num_workers`, …). */
export const PYTHON_TOOL_DEFAULTS = { timeoutS: 30, numWorkers: 16, maxRetries: 0 };

export function pythonToolHost(env: ToolEnv, config: Partial<PythonHostConfig> = {}): PythonHost {
  return new PythonHost({
    label: 'the Python tool host',
    python: config.executable,
    baseDir: env.baseDir,
    env: env.env,
    instanceTtlS: config.instance_ttl,
    maxInstances: config.max_instances,
  });
}

/**
 * A file named relative to the config; a run's inputs uploaded to the bucket sit side by side (by file name), so
 * the name alone is looked up there too.
 */
export function resolveUserFile(baseDir: string, path: string): string {
  const full = isAbsolute(path) ? path : resolve(baseDir, path);
  if (existsSync(full)) return full;
  const flat = resolve(baseDir, basename(path));
  return existsSync(flat) ? flat : full;
}

/** Loads the entry's class into the host; the tool it returns reports the class's schema. */
export async function buildPythonTool(
  spec: ToolSpec,
  key: string,
  host: PythonHost,
  env: ToolEnv,
  timeoutMs: number,
): Promise<Tool> {
  const where =
    spec.path !== undefined
      ? { path: resolveUserFile(env.baseDir, spec.path), name: spec.name }
      : { className: spec.class_name };
  const label = spec.path !== undefined ? `${spec.name} from ${spec.path}` : spec.class_name!;
  let schema: ToolSchema;
  try {
    const loaded = LoadToolResultSchema.parse(
      await host.setup('load_tool', {
        key,
        ...where,
        label,
        config: spec.config,
        toolSchema: spec.tool_schema ?? null,
      }),
    );
    schema = ToolSchemaSchema.parse(loaded.schema);
  } catch (err) {
    throw new Error(`tool ${label}: ${(err as Error).message}`);
  }
  return new PythonTool(schema, host, key, label, timeoutMs / 1000);
}

/** verl's per-tool row arguments: `extra_info.tools_kwargs.<tool>.{create,execute,calc_reward,release}_kwargs`. */
function toolKwargs(
  extraInfo: Record<string, unknown>,
  tool: string,
): Record<string, Record<string, unknown>> {
  const all = extraInfo.tools_kwargs;
  if (all === undefined || all === null) return {};
  const mine = (all as Record<string, unknown>)[tool];
  if (
    typeof all !== 'object' ||
    Array.isArray(all) ||
    (mine !== undefined && (typeof mine !== 'object' || mine === null || Array.isArray(mine)))
  )
    throw new ToolFailure('internal_error', `the row's extra_info.tools_kwargs.${tool} must be an object`);
  const out: Record<string, Record<string, unknown>> = {};
  for (const [k, v] of Object.entries((mine ?? {}) as Record<string, unknown>)) {
    if (!k.endsWith('_kwargs')) continue;
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new ToolFailure(
        'internal_error',
        `the row's extra_info.tools_kwargs.${tool}.${k} must be an object`,
      );
    out[k] = v as Record<string, unknown>;
  }
  return out;
}

/** Error types of calls the tool ran (others were refused before it: bad arguments, limits, unknown tool). */
const RAN = new Set(['execution_error', 'timeout']);

/** The arguments of the trajectory's earlier calls to `tool` that ran: what a rebuild replays, in order. */
export const executedCalls = (history: readonly ToolCallRecord[], tool: string): unknown[] =>
  history
    .filter(
      (c) => c.name === tool && (c.result.ok || (c.result.error !== null && RAN.has(c.result.error.type))),
    )
    .map((c) => c.arguments);

function toFailure(err: unknown, label: string): ToolFailure {
  if (err instanceof ToolFailure) return err;
  if (err instanceof PythonHostError) {
    if (err.type === 'user_error') return new ToolFailure('execution_error', err.message);
    if (err.type === 'timeout') return new ToolFailure('timeout', err.message);
    return new ToolFailure('internal_error', `${label}: ${err.message}`);
  }
  return new ToolFailure('internal_error', `${label}: ${(err as Error)?.message ?? String(err)}`);
}

class PythonTool implements Tool {
  readonly ownsTimeout = true;

  constructor(
    readonly schema: ToolSchema,
    private readonly host: PythonHost,
    private readonly key: string,
    private readonly label: string,
    /** The tool's `timeout`: each call into its code at the end of a trajectory gets this long too. */
    private readonly timeoutS: number,
    private readonly trajectory?: TrajectoryContext,
  ) {}

  private get name(): string {
    return this.schema.function.name;
  }

  forTrajectory(t: TrajectoryContext): Tool {
    return new PythonTool(this.schema, this.host, this.key, this.label, this.timeoutS, t);
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput> {
    // Outside a trajectory (`toolrl tools call`, a registry used directly) a call is a trajectory of its own.
    const t = this.trajectory ?? { id: `call-${randomUUID()}`, extraInfo: {}, history: [] };
    try {
      const kwargs = toolKwargs(t.extraInfo, this.name);
      const history = executedCalls(t.history, this.name);
      const raw = await this.host.request(
        'execute',
        {
          key: this.key,
          instance: t.id,
          parameters: args,
          kwargs: kwargs.execute_kwargs ?? {},
          ensure: {
            createKwargs: kwargs.create_kwargs ?? {},
            executeKwargs: kwargs.execute_kwargs ?? {},
            history,
          },
        },
        { timeoutS: ctx.timeoutMs / 1000, calls: 2 + history.length, signal: ctx.signal },
      );
      const out = ExecuteResultSchema.parse(raw);
      return {
        text: out.text,
        ...(out.reward !== undefined ? { reward: out.reward } : {}),
        ...(out.metrics !== undefined ? { metrics: out.metrics } : {}),
      };
    } catch (err) {
      throw toFailure(err, this.label);
    } finally {
      if (!this.trajectory) await this.release(t.id, {}, ctx.timeoutMs / 1000).catch(() => {});
    }
  }

  private release(instance: string, kwargs: Record<string, unknown>, timeoutS: number): Promise<unknown> {
    return this.host.request('release', { key: this.key, instance, kwargs }, { timeoutS });
  }

  async finishTrajectory(t: TrajectoryContext, signal?: AbortSignal): Promise<number | null> {
    const kwargs = toolKwargs(t.extraInfo, this.name);
    const history = executedCalls(t.history, this.name);
    // Not model-facing: a rebuild may take what it takes, each call within the tool's timeout.
    const timeoutS = this.timeoutS;
    try {
      const out = CalcRewardResultSchema.parse(
        await this.host.request(
          'calc_reward',
          {
            key: this.key,
            instance: t.id,
            kwargs: kwargs.calc_reward_kwargs ?? {},
            ensure: {
              createKwargs: kwargs.create_kwargs ?? {},
              executeKwargs: kwargs.execute_kwargs ?? {},
              history,
            },
          },
          { timeoutS, calls: 2 + history.length, ...(signal ? { signal } : {}) },
        ),
      );
      return out.reward;
    } catch (err) {
      throw toFailure(err, `${this.label}.calc_reward`);
    } finally {
      await this.release(t.id, kwargs.release_kwargs ?? {}, timeoutS).catch(() => {});
    }
  }
}

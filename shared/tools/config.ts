// The config keys every tool accepts (verl's tool-config names) and the parse of a tool's own keys,
// with errors that name the tool and the key.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** A config file (a verl tool-config file, a CLI input) that cannot be read or is not valid JSON/YAML. */
export class ConfigFileError extends Error {
  override name = 'ConfigFileError';
}

/** Reads a .json, .yaml or .yml file; a missing or malformed file is a ConfigFileError naming it. */
export function readConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigFileError(
      `${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message}`,
    );
  }
}

/**
 * Limits applied by the registry around every tool.
 * `timeout` (seconds; verl's `default_timeout` is accepted, and a code tool's run is given that long), `num_workers`
 * (concurrent calls of this tool instance), `rate_limit` (concurrent calls, as verl and MindSpeed-RL mean it: their
 * "rate limiter" is a semaphore of that many slots), `calls_per_second` (a true rate, a token bucket: for paid or
 * throttled APIs), `enable_global_rate_limit` (verl's key): true makes every registry in this process that configures
 * the tool with the same limits share one semaphore (and bucket), as verl's named "rate-limiter" actor is shared by
 * every tool instance; false or absent gives each registry (one per run and curriculum stage) its own. Unlike verl
 * the default is false: a process here is one Lambda container among many, so no limit is global to a run anyway,
 * and runs that share the embedded runtime should not slow each other down unless asked to.
 * `max_retries` (transient HTTP failures only). `type: native` from verl configs is accepted and ignored.
 */
export const CommonToolConfigSchema = z.object({
  timeout: z.number().positive().optional(),
  default_timeout: z.number().positive().optional(),
  num_workers: z.number().int().positive().optional(),
  rate_limit: z.number().int().positive().optional(),
  calls_per_second: z.number().positive().optional(),
  enable_global_rate_limit: z.boolean().optional(),
  max_retries: z.number().int().nonnegative().optional(),
  retry_backoff: z.number().nonnegative().optional(),
  type: z.string().optional(),
});
export type CommonToolConfig = z.infer<typeof CommonToolConfigSchema>;
const COMMON_KEYS = new Set(Object.keys(CommonToolConfigSchema.shape));

export interface ToolLimits {
  timeoutMs: number;
  numWorkers: number;
  /** Calls in flight at once (`rate_limit`, verl's meaning), or null for no cap beyond numWorkers. */
  concurrencyCap: number | null;
  /** Calls per second (`calls_per_second`), or null for unlimited. */
  callsPerSecond: number | null;
  /** One cap (and bucket) for every registry of this process that has the tool (`enable_global_rate_limit`). */
  globalRateLimit: boolean;
  maxRetries: number;
  retryBaseMs: number;
}

export interface LimitDefaults {
  timeoutS: number;
  numWorkers: number;
  maxRetries?: number;
  /**
   * Seconds the registry waits beyond the tool's own time limit, so that the tool's limit fires first and its
   * answer (a sandbox's "time limit exceeded" with the output so far) reaches the model. Only kinds that enforce a
   * time limit themselves set it.
   */
  timeoutGraceS?: number;
}

/** The time limit a tool enforces itself, from its own options (a code tool's run_timeout), if it has one. */
export type OwnTimeout = (options: Record<string, unknown>) => number | undefined;

/** Splits a tool's `config` into the registry's limits and the tool's own keys (parsed strictly). */
export function parseToolConfig<S extends z.ZodObject>(
  kind: string,
  config: Record<string, unknown>,
  own: S,
  defaults: LimitDefaults,
  ownTimeout?: OwnTimeout,
): { limits: ToolLimits; options: z.infer<S> } {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    // A kind that takes a common key as its own too (the code tool runs its program for `default_timeout`) gets it.
    if (!COMMON_KEYS.has(k) || k in own.shape) rest[k] = v;
  }
  const limits = parseToolLimits(kind, config, defaults);
  const options = parseOrThrow(kind, own.strict(), rest) as z.infer<S>;
  const ownS = ownTimeout?.(options as Record<string, unknown>);
  if (ownS === undefined) return { limits, options };
  return { limits: parseToolLimits(kind, config, defaults, ownS), options };
}

/**
 * The registry's limits from a tool's `config`; keys that are not limits are left to the tool. An explicit
 * `timeout` is the registry's hard limit; otherwise the tool's own limit (`ownTimeoutS`, or verl's
 * `default_timeout`) plus the grace that lets the tool report it first.
 */
export function parseToolLimits(
  kind: string,
  config: Record<string, unknown>,
  defaults: LimitDefaults,
  ownTimeoutS?: number,
): ToolLimits {
  const common: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) if (COMMON_KEYS.has(k)) common[k] = v;
  const c = parseOrThrow(kind, CommonToolConfigSchema.strict(), common);
  if (c.enable_global_rate_limit && c.rate_limit === undefined && c.calls_per_second === undefined)
    throw new Error(
      `tool ${kind}: bad config: enable_global_rate_limit shares the rate limit, but neither rate_limit (calls at once) nor calls_per_second is set`,
    );
  const timeoutS =
    c.timeout ?? (ownTimeoutS ?? c.default_timeout ?? defaults.timeoutS) + (defaults.timeoutGraceS ?? 0);
  return {
    timeoutMs: timeoutS * 1000,
    numWorkers: c.num_workers ?? defaults.numWorkers,
    concurrencyCap: c.rate_limit ?? null,
    callsPerSecond: c.calls_per_second ?? null,
    globalRateLimit: c.enable_global_rate_limit ?? false,
    maxRetries: c.max_retries ?? defaults.maxRetries ?? 2,
    retryBaseMs: (c.retry_backoff ?? 0.2) * 1000,
  };
}

export function parseOrThrow<S extends z.ZodType>(kind: string, schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues
    .map((i) => `${i.path.length ? i.path.join('.') : '(config)'}: ${i.message}`)
    .join('; ');
  throw new Error(`tool ${kind}: bad config: ${issues}`);
}

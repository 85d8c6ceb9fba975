// The config keys every tool accepts (verl's tool-config names) and the parse of a tool's own keys,
// with errors that name the tool and the key.
import { z } from 'zod';

/**
 * Limits applied by the registry around every tool.
 * `timeout` (seconds; verl's `default_timeout` is accepted), `num_workers` (concurrent calls),
 * `rate_limit` (calls per second, token bucket; verl uses it as a concurrency cap, we keep it a rate),
 * `enable_global_rate_limit` (verl's key): true makes every registry in this process that configures the tool with
 * the same `rate_limit` draw from one bucket, as verl's named "rate-limiter" actor is shared by every tool instance;
 * false or absent gives each registry (one per run and curriculum stage) its own. Unlike verl the default is false:
 * a process here is one Lambda container among many, so no bucket is global to a run anyway, and runs that share
 * the embedded runtime should not slow each other down unless asked to.
 * `max_retries` (transient HTTP failures only). `type: native` from verl configs is accepted and ignored.
 */
export const CommonToolConfigSchema = z.object({
  timeout: z.number().positive().optional(),
  default_timeout: z.number().positive().optional(),
  num_workers: z.number().int().positive().optional(),
  rate_limit: z.number().positive().optional(),
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
  /** Calls per second, or null for unlimited. */
  rateLimit: number | null;
  /** One rate-limit bucket for every registry of this process that has the tool (`enable_global_rate_limit`). */
  globalRateLimit: boolean;
  maxRetries: number;
  retryBaseMs: number;
}

export interface LimitDefaults {
  timeoutS: number;
  numWorkers: number;
  maxRetries?: number;
}

/** Splits a tool's `config` into the registry's limits and the tool's own keys (parsed strictly). */
export function parseToolConfig<S extends z.ZodObject>(
  kind: string,
  config: Record<string, unknown>,
  own: S,
  defaults: LimitDefaults,
): { limits: ToolLimits; options: z.infer<S> } {
  const common: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) (COMMON_KEYS.has(k) ? common : rest)[k] = v;
  const c = parseOrThrow(kind, CommonToolConfigSchema.strict(), common);
  if (c.enable_global_rate_limit && c.rate_limit === undefined)
    throw new Error(
      `tool ${kind}: bad config: enable_global_rate_limit shares the rate_limit bucket, but no rate_limit (calls per second) is set`,
    );
  const options = parseOrThrow(kind, own.strict(), rest) as z.infer<S>;
  const limits: ToolLimits = {
    timeoutMs: (c.timeout ?? c.default_timeout ?? defaults.timeoutS) * 1000,
    numWorkers: c.num_workers ?? defaults.numWorkers,
    rateLimit: c.rate_limit ?? null,
    globalRateLimit: c.enable_global_rate_limit ?? false,
    maxRetries: c.max_retries ?? defaults.maxRetries ?? 2,
    retryBaseMs: (c.retry_backoff ?? 0.2) * 1000,
  };
  return { limits, options };
}

export function parseOrThrow<S extends z.ZodType>(kind: string, schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues
    .map((i) => `${i.path.length ? i.path.join('.') : '(config)'}: ${i.message}`)
    .join('; ');
  throw new Error(`tool ${kind}: bad config: ${issues}`);
}

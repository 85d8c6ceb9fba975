// The config keys every tool accepts (verl's tool-config names) and the parse of a tool's own keys,
// with errors that name the tool and the key.
import { z } from 'zod';

/**
 * Limits applied by the registry around every tool.
 * `timeout` (seconds; verl's `default_timeout` is accepted), `num_workers` (concurrent calls),
 * `rate_limit` (calls per second, token bucket; verl uses it as a concurrency cap, we keep it a rate),
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
  const options = parseOrThrow(kind, own.strict(), rest) as z.infer<S>;
  const limits: ToolLimits = {
    timeoutMs: (c.timeout ?? c.default_timeout ?? defaults.timeoutS) * 1000,
    numWorkers: c.num_workers ?? defaults.numWorkers,
    rateLimit: c.rate_limit ?? null,
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

// The methods of the Python host (python/toolrl_pyhost/server.py) over the JSON-lines RPC (rpc.ts): a request may
// carry `"timeout": 30` (seconds, each call into user code), and the host answers requests in any order, running
// them concurrently. These schemas check every result before it is used.
import { z } from 'zod';

export const HostErrorTypeSchema = z.enum(['bad_request', 'load_error', 'user_error', 'timeout', 'internal']);

/** @example {"python": "3.11.7", "pid": 4242, "verl": "0.7.0"} */
export const HelloSchema = z.object({
  python: z.string(),
  pid: z.number().int(),
  verl: z.string().nullable(),
});
export type Hello = z.infer<typeof HelloSchema>;

export const LoadToolResultSchema = z.object({
  schema: z.object({
    type: z.string().default('function'),
    function: z.looseObject({ name: z.string().min(1) }),
  }),
});

/** What a tool's execute returned, as text (+ verl's step reward and metrics), and whether it was rebuilt first. */
export const ExecuteResultSchema = z.object({
  text: z.string(),
  reward: z.number().optional(),
  metrics: z.record(z.string(), z.unknown()).optional(),
  rebuilt: z.boolean(),
  replayed: z.number().int().nonnegative(),
});
export type ExecuteResult = z.infer<typeof ExecuteResultSchema>;

export const CalcRewardResultSchema = z.object({ reward: z.number().nullable(), rebuilt: z.boolean() });

/** Per item: the score and a dict return's other numbers, or why the item could not be scored. */
export const ScoreResultSchema = z.object({
  results: z.array(
    z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), score: z.number(), extra: z.record(z.string(), z.number()) }),
      z.object({ ok: z.literal(false), error: z.object({ type: z.string(), message: z.string() }) }),
    ]),
  ),
});
export type ScoreResult = z.infer<typeof ScoreResultSchema>['results'][number];

export const StatsSchema = z.object({
  loaded: z.number(),
  created: z.number(),
  /** Instances created again and brought up to date by replaying the trajectory's earlier calls. */
  rebuilt: z.number(),
  replayed: z.number(),
  executed: z.number(),
  released: z.number(),
  /** Released by the host itself: idle past the ttl, or over max_instances. */
  evicted: z.number(),
  scored: z.number(),
  failed: z.number(),
  live: z.number(),
});
export type Stats = z.infer<typeof StatsSchema>;

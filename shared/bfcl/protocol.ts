// The methods of the BFCL environment process (python/toolrl_bfcl/server.py) over the JSON-lines RPC
// (shared/pyhost/rpc.ts); its errors are `bad_request` and `internal`. These schemas check every result before use.
import { z } from 'zod';

/**
 * What an environment is built from (BFCL's `id`, `initial_config`, `involved_classes`).
 * @example {"id": "multi_turn_base_0", "initialConfig": {"GorillaFileSystem": {"root": {…}}},
 *   "involvedClasses": ["TwitterAPI", "GorillaFileSystem"]}
 */
export const BfclEntrySchema = z.object({
  id: z.string().min(1),
  initialConfig: z.record(z.string(), z.unknown()),
  involvedClasses: z.array(z.string().min(1)).min(1),
});
export type BfclEntry = z.infer<typeof BfclEntrySchema>;

/** A call as the model wrote it (JSON arguments); the process turns it into BFCL's call string. */
export interface BfclCall {
  name: string;
  arguments: unknown;
}

export const HelloSchema = z.object({
  bfclEval: z.string(),
  python: z.string(),
  classes: z.array(z.string()),
});
export type Hello = z.infer<typeof HelloSchema>;

/** One result per executed call; `raised`: BFCL's executor caught an exception (the output says which). */
export const ExecuteResultSchema = z.object({
  results: z.array(z.object({ output: z.string(), raised: z.boolean() })),
});

export const TurnCheckSchema = z.object({
  passed: z.boolean(),
  /** `ok`, `no_ground_truth` (passes, as in BFCL), or why it failed: `not_reached`, `empty_turn_model_response`,
   * `instance_state_mismatch`, `execution_response_mismatch`. */
  check: z.string(),
  message: z.string(),
});
export type TurnCheck = z.infer<typeof TurnCheckSchema>;

/** Per user turn, and all turns together as BFCL's `multi_turn_checker` judges them. */
export const ScoreResultSchema = z.object({
  turns: z.array(TurnCheckSchema),
  success: z.object({ valid: z.boolean(), errorType: z.string().nullable(), message: z.string() }),
  /** Calls that could not be made into BFCL call strings (hand-written input naming unknown functions). */
  skippedCalls: z.number().int().nonnegative(),
});
export type ScoreResult = z.infer<typeof ScoreResultSchema>;

/** Public attributes of every instance of the entry's classes (what BFCL's state check compares). */
export const StateResultSchema = z.object({ state: z.record(z.string(), z.unknown()) });

export const ParseResultSchema = z.object({
  calls: z.array(z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()) })),
});

export const StatsSchema = z.object({
  /** States rebuilt from initial_config by replaying a trajectory's calls. */
  replays: z.number(),
  /** States continued from the live instances kept after a trajectory's previous call. */
  continued: z.number(),
  replayedCalls: z.number(),
  calls: z.number(),
  live: z.number(),
});
export type Stats = z.infer<typeof StatsSchema>;

// What executing one tool call produces. Every failure is a value (ok: false) the model can read,
// never an exception out of the batch.
import { z } from 'zod';

export const ToolErrorTypeSchema = z.enum([
  'unknown_tool',
  'invalid_arguments',
  'timeout',
  'rate_limited',
  'execution_error',
  'http_error',
  'resource_limit',
  'parse_error',
  'internal_error',
  /** A cached API server (StableToolBench's cache, `toolrl toolbench serve`) has no answer for this call. */
  'not_cached',
]);
export type ToolErrorType = z.infer<typeof ToolErrorTypeSchema>;

export const ToolErrorSchema = z.object({ type: ToolErrorTypeSchema, message: z.string() });
export type ToolError = z.infer<typeof ToolErrorSchema>;

/**
 * The result of one tool call, exactly the shape `toolrl tools call --json` prints.
 * @example {"ok": true, "output": "391", "error": null, "truncated": false}
 */
export const ToolResultSchema = z.object({
  ok: z.boolean(),
  output: z.string(),
  error: ToolErrorSchema.nullable(),
  truncated: z.boolean(),
  /** The step reward a tool reported with its output (verl's `tool_reward_score`), when it reported one. */
  reward: z.number().optional(),
  /** The metrics a tool reported with its output (verl's `tool_metrics`), when it reported any. */
  metrics: z.record(z.string(), z.unknown()).optional(),
});
export type ToolResult = z.infer<typeof ToolResultSchema>;

/** A call parsed out of the model's text. `arguments` is whatever JSON the model wrote (validated later). */
export const ToolCallSchema = z.object({ name: z.string(), arguments: z.unknown() });
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** A call together with its result, as kept in a trajectory's turn record. */
export const ToolCallRecordSchema = ToolCallSchema.extend({
  result: ToolResultSchema,
  durationMs: z.number().nonnegative().default(0),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;

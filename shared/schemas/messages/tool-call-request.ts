// The tool-calls queue message: a trajectory whose last assistant turn asked for tools.
import { z } from 'zod';
import { ToolCallSchema } from '../tool-result.ts';
import { TrajectoryInFlightSchema } from './trajectory-in-flight.ts';

/**
 * `calls` are executed; `rejected` (over `max_parallel_calls` / `max_tool_calls`, or unparsable) are not and
 * come back to the model as tool errors. Both in the order the model wrote them.
 * @example {"schemaVersion": 1, "trajectory": {"…": "TrajectoryInFlight"},
 *   "calls": [{"name": "calculator", "arguments": {"expression": "17*23"}}], "rejected": []}
 */
export const ToolCallRequestSchema = z.object({
  schemaVersion: z.literal(1),
  trajectory: TrajectoryInFlightSchema,
  calls: z.array(ToolCallSchema),
  rejected: z.array(z.object({ call: ToolCallSchema.nullable(), message: z.string() })).default([]),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequestSchema>;

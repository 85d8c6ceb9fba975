// The tool-calls queue message: a trajectory whose last assistant turn asked for tools.
import { z } from 'zod';
import { ToolCallSchema } from '../tool-result.ts';
import { TrajectoryInFlightSchema } from './trajectory-in-flight.ts';

/**
 * `calls` are the ones to execute, in the order the model wrote them; calls over `max_parallel_calls` /
 * `max_tool_calls` are already marked rejected in the episode state and come back to the model as errors.
 * @example {"schemaVersion": 1, "trajectory": {"…": "TrajectoryInFlight"},
 *   "calls": [{"name": "calculator", "arguments": {"expression": "17*23"}}]}
 */
export const ToolCallRequestSchema = z.object({
  schemaVersion: z.literal(1),
  trajectory: TrajectoryInFlightSchema,
  calls: z.array(ToolCallSchema),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequestSchema>;

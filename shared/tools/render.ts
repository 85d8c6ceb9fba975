// What the model reads for one tool result: the output, and on failure the error after it. One place
// so the episode logic, the rewards and `toolrl tools call` agree.
import type { ToolResult } from '#shared/schemas/tool-result';

export function renderToolResult(result: ToolResult): string {
  if (result.ok) return result.output;
  const error = `Error (${result.error?.type ?? 'internal_error'}): ${result.error?.message ?? 'unknown error'}`;
  return result.output ? `${result.output}\n${error}` : error;
}

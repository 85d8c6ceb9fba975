// How tool results and malformed calls are shown to the model: the `tool` messages appended after a turn.
// One result reads as `toolrl tools call` prints it (shared/tools/render.ts).
import type { ParseError } from '#shared/parsing/types';
import type { ChatMessage } from '#shared/schemas/chat';
import type { ToolResult } from '#shared/schemas/tool-result';
import { renderToolResult } from '#shared/tools/render';

/** Parse errors listed in full in the one message that reports them; the rest are counted. */
const MAX_LISTED_PARSE_ERRORS = 8;

/** `wrapper` (the code_block format's `output_wrapper`) puts the rendered result where it says `{output}`. */
export const toolMessage = (name: string, result: ToolResult, wrapper?: string): ChatMessage => ({
  role: 'tool',
  name,
  content: wrapper
    ? wrapper.replaceAll('{output}', () => renderToolResult(result))
    : renderToolResult(result),
});

/** One message for all the malformed calls of a turn: they have no place in the assistant's `tool_calls`. */
export function parseErrorMessage(errors: Pick<ParseError, 'message'>[]): ChatMessage {
  const listed = errors.slice(0, MAX_LISTED_PARSE_ERRORS).map((e, i) => `${i + 1}. ${e.message}`);
  const more =
    errors.length > MAX_LISTED_PARSE_ERRORS ? [`… and ${errors.length - MAX_LISTED_PARSE_ERRORS} more`] : [];
  const head =
    errors.length === 1
      ? 'Error (parse_error): 1 malformed tool call was not executed:'
      : `Error (parse_error): ${errors.length} malformed tool calls were not executed:`;
  return { role: 'tool', content: [head, ...listed, ...more].join('\n') };
}

// The Hermes / Qwen tool-call format: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, any number per turn.
// The scan of the tags is tagged.ts's; the JSON between them is decoded here. When that JSON does not parse and a
// later `</tool_call>` follows, the longer span is tried too: a closing tag written inside a JSON string.
import type { ToolCall } from '#shared/schemas/tool-result';
import { CLOSE, clip, type Decoded, MESSAGE_CHARS, OPEN, parseTagged } from './tagged.ts';
import type { ParseResult, ToolCallParser } from './types.ts';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Decodes the JSON between the tags into a call, or says precisely what is wrong with it. */
export function decodeHermesCall(body: string): Decoded {
  const json = body.trim();
  if (json === '') return { error: 'empty <tool_call>: expected {"name": …, "arguments": {…}}' };
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    return { error: `invalid JSON in <tool_call>: ${clip((err as Error).message, MESSAGE_CHARS)}` };
  }
  if (!isPlainObject(value)) {
    const kind = Array.isArray(value) ? 'an array' : typeof value;
    return { error: `a <tool_call> must hold one JSON object {"name": …, "arguments": {…}}, got ${kind}` };
  }
  const name = value['name'];
  if (name === undefined || name === null || name === '') return { error: 'tool call has no "name"' };
  if (typeof name !== 'string') return { error: `tool call "name" must be a string, got ${typeof name}` };
  // Llama-style `parameters` is accepted as an alias; a call with neither takes no arguments.
  let args: unknown = 'arguments' in value ? value['arguments'] : (value['parameters'] ?? {});
  if (typeof args === 'string') {
    // Some chat templates (and models trained on them) write arguments as a JSON-encoded string.
    if (args.trim() === '') args = {};
    else {
      try {
        args = JSON.parse(args);
      } catch (err) {
        return {
          error: `"arguments" of ${clip(name, 64)} is a string but not valid JSON: ${clip((err as Error).message, MESSAGE_CHARS)}`,
        };
      }
    }
  }
  if (args === null) args = {};
  if (!isPlainObject(args)) {
    const kind = Array.isArray(args) ? 'an array' : typeof args;
    return { error: `"arguments" of ${clip(name, 64)} must be a JSON object, got ${kind}` };
  }
  return { call: { name, arguments: args } };
}

/** A body that is not valid JSON may have been cut at a `</tool_call>` inside a JSON string: try longer spans. */
function decodeOrRetry(body: string): Decoded {
  const decoded = decodeHermesCall(body);
  return 'error' in decoded && decoded.error.startsWith('invalid JSON')
    ? { ...decoded, retryLonger: true }
    : decoded;
}

const parseHermes = (text: string): ParseResult => parseTagged(text, decodeOrRetry);

function renderHermes(calls: ToolCall[]): string {
  return calls
    .map((c) => `${OPEN}\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n${CLOSE}`)
    .join('\n');
}

export const hermesParser: ToolCallParser = { format: 'hermes', parse: parseHermes, render: renderHermes };

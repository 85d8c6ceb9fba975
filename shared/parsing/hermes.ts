// The Hermes / Qwen tool-call format: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, any number per turn.
// `<tool_call>` and `</tool_call>` are reserved delimiters (single special tokens in the Qwen2.5/Qwen3
// vocabularies), so a call is the text between an opening tag and the next closing tag, as in the reference
// Hermes parsers; the JSON inside is then decoded on its own.
import type { ToolCall } from '#shared/schemas/tool-result';
import type { ParseError, ParseResult, ToolCallParser } from './types.ts';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const SNIPPET_CHARS = 200;
const MESSAGE_CHARS = 300;

/**
 * `indexOf` with a memory: queries must come with non-decreasing `from`, and each character is scanned at
 * most once over the whole parse. This is what keeps hostile input (megabytes of unclosed or nested tags)
 * linear: without it, every opening tag would rescan the rest of the text for its closing tag.
 */
function forwardFinder(text: string, needle: string): (from: number) => number {
  let found = -2; // -2: never searched; -1: no occurrence at or after the last query
  return (from) => {
    if (found === -1 || found >= from) return found;
    found = text.indexOf(needle, from);
    return found;
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s);

type Decoded = { call: ToolCall } | { error: string };

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

function parseHermes(text: string): ParseResult {
  const calls: ToolCall[] = [];
  const errors: ParseError[] = [];
  const content: string[] = [];
  const nextOpen = forwardFinder(text, OPEN);
  const nextClose = forwardFinder(text, CLOSE);
  const fail = (message: string, offset: number, end: number) =>
    errors.push({
      message,
      offset,
      snippet: clip(text.slice(offset, Math.min(end, offset + SNIPPET_CHARS)), SNIPPET_CHARS),
    });

  /** Text outside calls; a closing tag with no opening one is reported but kept as text. */
  const keepContent = (start: number, end: number) => {
    for (let c = nextClose(start); c !== -1 && c < end; c = nextClose(c + CLOSE.length)) {
      fail(`${CLOSE} without a matching ${OPEN}`, c, c + CLOSE.length);
    }
    content.push(text.slice(start, end));
  };

  let pos = 0;
  while (pos < text.length) {
    const open = nextOpen(pos);
    if (open === -1) {
      keepContent(pos, text.length);
      break;
    }
    keepContent(pos, open);
    const bodyStart = open + OPEN.length;
    const close = nextClose(bodyStart);
    const inner = nextOpen(bodyStart);
    if (close === -1) {
      // With no closing tag anywhere after it, no later call can be complete either.
      fail(`unclosed ${OPEN}: no ${CLOSE} follows`, open, text.length);
      break;
    }
    if (inner !== -1 && inner < close) {
      // A new call starts before this one closed: report this one and resume at the new one.
      fail(`unclosed ${OPEN}: another ${OPEN} starts before ${CLOSE}`, open, inner);
      pos = inner;
      continue;
    }
    const decoded = decodeHermesCall(text.slice(bodyStart, close));
    if ('call' in decoded) calls.push(decoded.call);
    else fail(decoded.error, open, close + CLOSE.length);
    pos = close + CLOSE.length;
  }
  return { calls, errors, content: content.join('').trim() };
}

function renderHermes(calls: ToolCall[]): string {
  return calls
    .map((c) => `${OPEN}\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n${CLOSE}`)
    .join('\n');
}

export const hermesParser: ToolCallParser = { format: 'hermes', parse: parseHermes, render: renderHermes };

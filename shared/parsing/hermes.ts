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

type Tag = { kind: 'open' | 'close'; at: number } | null;

/**
 * The next `<tool_call>` or `</tool_call>` at or after `from`. The parse below only ever asks for tags after
 * the last one it got, so the whole text is scanned once, whatever it holds: this is what keeps hostile input
 * (megabytes of unclosed or nested tags) linear, where searching for each opening tag's closing tag again
 * would rescan the rest of the text per tag.
 */
function nextTag(text: string, from: number): Tag {
  for (let i = text.indexOf('<', from); i !== -1; i = text.indexOf('<', i + 1)) {
    if (text.startsWith(OPEN, i)) return { kind: 'open', at: i };
    if (text.startsWith(CLOSE, i)) return { kind: 'close', at: i };
  }
  return null;
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
  const fail = (message: string, offset: number, end: number) =>
    errors.push({
      message,
      offset,
      snippet: clip(text.slice(offset, Math.min(end, offset + SNIPPET_CHARS)), SNIPPET_CHARS),
    });

  // Past the last closing tag no call can be complete: one error there, not one per opening tag. Looked up
  // only once a call turns out unclosed, so well-formed turns never pay for it.
  let lastClose: number | undefined;
  let pos = 0; // start of the text not yet assigned to content or a call
  let tag = nextTag(text, 0);
  while (tag !== null) {
    if (tag.kind === 'close') {
      // A closing tag with no opening one: reported, and kept as the model's text.
      fail(`${CLOSE} without a matching ${OPEN}`, tag.at, tag.at + CLOSE.length);
      tag = nextTag(text, tag.at + CLOSE.length);
      continue;
    }
    content.push(text.slice(pos, tag.at));
    const open = tag.at;
    const bodyStart = open + OPEN.length;
    tag = nextTag(text, bodyStart);
    if (tag === null || tag.kind === 'open') lastClose ??= text.lastIndexOf(CLOSE);
    if (tag === null || open > lastClose!) {
      fail(`unclosed ${OPEN}: no ${CLOSE} follows`, open, text.length);
      pos = text.length;
      break;
    }
    if (tag.kind === 'open') {
      // A new call starts before this one closed: report this one and go on with the new one.
      fail(`unclosed ${OPEN}: another ${OPEN} starts before ${CLOSE}`, open, tag.at);
      pos = tag.at;
      continue;
    }
    const decoded = decodeHermesCall(text.slice(bodyStart, tag.at));
    if ('call' in decoded) calls.push(decoded.call);
    else fail(decoded.error, open, tag.at + CLOSE.length);
    pos = tag.at + CLOSE.length;
    tag = nextTag(text, pos);
  }
  content.push(text.slice(pos));
  return { calls, errors, content: content.join('').trim() };
}

function renderHermes(calls: ToolCall[]): string {
  return calls
    .map((c) => `${OPEN}\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n${CLOSE}`)
    .join('\n');
}

export const hermesParser: ToolCallParser = { format: 'hermes', parse: parseHermes, render: renderHermes };

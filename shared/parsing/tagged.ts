// The scan shared by the formats whose calls sit between `<tool_call>` and `</tool_call>` (Hermes, Qwen3-Coder):
// a call is the text between an opening tag and the next closing tag, decoded on its own by the format. The
// tags are reserved delimiters (single special tokens in the Qwen2.5/Qwen3 vocabularies).
import type { ToolCall } from '#shared/schemas/tool-result';
import type { ParseError, ParseResult } from './types.ts';

export const OPEN = '<tool_call>';
export const CLOSE = '</tool_call>';
const SNIPPET_CHARS = 200;
export const MESSAGE_CHARS = 300;
/**
 * Closing tags past the first that a body may be extended to when it fails to decode (a `</tool_call>` written
 * inside a JSON string). Bounded, so a text of many closing tags still parses in linear time.
 */
const MAX_LONGER_SPANS = 4;

type Tag = { kind: 'open' | 'close'; at: number } | null;

/**
 * The next `<tool_call>` or `</tool_call>` at or after `from`. The parse below only ever asks for tags after
 * the last one it got (but for at most MAX_LONGER_SPANS closing tags looked at again), so the whole text is
 * scanned once, whatever it holds: this is what keeps hostile input (megabytes of unclosed or nested tags)
 * linear, where searching for each opening tag's closing tag again would rescan the rest of the text per tag.
 */
function nextTag(text: string, from: number): Tag {
  for (let i = text.indexOf('<', from); i !== -1; i = text.indexOf('<', i + 1)) {
    if (text.startsWith(OPEN, i)) return { kind: 'open', at: i };
    if (text.startsWith(CLOSE, i)) return { kind: 'close', at: i };
  }
  return null;
}

export const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s);

export type Decoded = { call: ToolCall } | { error: string; retryLonger?: boolean };

/**
 * Splits `text` into content and tagged calls, each body decoded by `decode`. A body whose decode fails with
 * `retryLonger` is tried again up to each of the next few closing tags (before any new opening tag): the first
 * span that decodes is the call.
 */
export function parseTagged(text: string, decode: (body: string) => Decoded): ParseResult {
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
    let decoded = decode(text.slice(bodyStart, tag.at));
    let end = tag.at;
    if ('error' in decoded && decoded.retryLonger) {
      let later = nextTag(text, end + CLOSE.length);
      for (let i = 0; i < MAX_LONGER_SPANS && later?.kind === 'close'; i++) {
        const longer = decode(text.slice(bodyStart, later.at));
        if ('call' in longer) {
          decoded = longer;
          end = later.at;
          break;
        }
        later = nextTag(text, later.at + CLOSE.length);
      }
    }
    if ('call' in decoded) calls.push(decoded.call);
    else fail(decoded.error, open, end + CLOSE.length);
    pos = end + CLOSE.length;
    tag = nextTag(text, pos);
  }
  content.push(text.slice(pos));
  return { calls, errors, content: content.join('').trim() };
}

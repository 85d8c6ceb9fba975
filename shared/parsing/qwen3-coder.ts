// The Qwen3-Coder tool-call format: XML-like tags inside the usual `<tool_call>` delimiters, one parameter per tag
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   </function>
//   </tool_call>
// Values are text; each is converted by the type its tool's schema gives the parameter (integer, number, boolean,
// object, array; null for `null`), never evaluated. A value that does not convert stays text, so the tool's
// argument validation reports it. Parameter tags must close; the model learns the format it is rewarded for.
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolCall } from '#shared/schemas/tool-result';
import { CLOSE, clip, type Decoded, OPEN, parseTagged } from './tagged.ts';
import type { ParseContext, ParseResult, ToolCallParser } from './types.ts';

const FUNCTION_OPEN = '<function=';
const FUNCTION_CLOSE = '</function>';
const PARAM_OPEN = '<parameter=';
const PARAM_CLOSE = '</parameter>';

type Properties = Record<string, unknown>;

/** The `properties` of the tool's parameters schema, or null when the tool is not among those offered. */
function propertiesOf(tools: readonly ToolSchema[] | undefined, name: string): Properties | null {
  const tool = tools?.find((t) => t.function.name === name);
  const params = tool?.function.parameters as { properties?: unknown } | undefined;
  if (!tool) return null;
  const props = params?.properties;
  return props && typeof props === 'object' && !Array.isArray(props) ? (props as Properties) : {};
}

/** The declared JSON type of a property: its `type` (the first non-null one of a list), else null. */
function declaredType(schema: unknown): string | null {
  if (!schema || typeof schema !== 'object') return null;
  const t = (schema as { type?: unknown }).type;
  if (typeof t === 'string') return t.toLowerCase();
  if (Array.isArray(t)) {
    const named = t.filter((x): x is string => typeof x === 'string' && x.toLowerCase() !== 'null');
    return named.length === 1 ? named[0]!.toLowerCase() : null;
  }
  return null;
}

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A parameter's text as the type its schema declares; text that is not of that type is kept as text. */
export function convertParameter(raw: string, schema: unknown): unknown {
  const type = declaredType(schema);
  if (type === 'string' || schema === undefined) return raw;
  const text = raw.trim();
  if (text.toLowerCase() === 'null') return null;
  switch (type) {
    case 'integer':
      return INTEGER.test(text) ? Number(text) : raw;
    case 'number':
      return NUMBER.test(text) ? Number(text) : raw;
    case 'boolean':
      return text.toLowerCase() === 'true' ? true : text.toLowerCase() === 'false' ? false : raw;
    default: {
      // object, array, or no single declared type (anyOf, enums): JSON when it is JSON, else the text.
      try {
        return JSON.parse(text);
      } catch {
        return raw;
      }
    }
  }
}

/** One leading and one trailing newline belong to the layout, not the value (as the template writes them). */
const trimLayout = (s: string): string => s.replace(/^\r?\n/, '').replace(/\r?\n$/, '');

function decodeBody(body: string, ctx: ParseContext): Decoded {
  const text = body.trim();
  if (!text.startsWith(FUNCTION_OPEN))
    return {
      error: `a <tool_call> must hold <function=NAME>…</function>, got ${JSON.stringify(clip(text, 60))}`,
    };
  const nameEnd = text.indexOf('>', FUNCTION_OPEN.length);
  if (nameEnd < 0) return { error: 'unclosed <function= tag: no ">" after the name' };
  const name = text.slice(FUNCTION_OPEN.length, nameEnd).trim();
  if (name === '') return { error: 'tool call has no name: <function=> is empty' };
  const close = text.lastIndexOf(FUNCTION_CLOSE);
  if (close < nameEnd || text.slice(close + FUNCTION_CLOSE.length).trim() !== '')
    // Perhaps cut at a </tool_call> written inside a value: a longer span may hold the whole call.
    return {
      error: `<function=${clip(name, 64)}> is not closed by </function> at the end of the call`,
      retryLonger: true,
    };
  const props = propertiesOf(ctx.tools, name);
  const args: Record<string, unknown> = {};
  let pos = nameEnd + 1;
  for (;;) {
    const start = text.indexOf(PARAM_OPEN, pos);
    const gap = text.slice(pos, start < 0 || start > close ? close : start);
    if (gap.trim() !== '')
      return {
        error: `text outside <parameter=…> tags in ${clip(name, 64)}: ${JSON.stringify(clip(gap.trim(), 60))}`,
      };
    if (start < 0 || start > close) break;
    const keyEnd = text.indexOf('>', start + PARAM_OPEN.length);
    const end = text.indexOf(PARAM_CLOSE, start);
    if (keyEnd < 0 || end < 0 || end > close || keyEnd > end)
      return { error: `unclosed <parameter=…> in ${clip(name, 64)}: each parameter ends with </parameter>` };
    const key = text.slice(start + PARAM_OPEN.length, keyEnd).trim();
    if (key === '') return { error: `a parameter of ${clip(name, 64)} has no name` };
    if (Object.hasOwn(args, key))
      return { error: `parameter ${clip(key, 64)} of ${clip(name, 64)} is given twice` };
    const raw = trimLayout(text.slice(keyEnd + 1, end));
    args[key] = props ? convertParameter(raw, props[key]) : raw;
    pos = end + PARAM_CLOSE.length;
  }
  return { call: { name, arguments: args } };
}

const parse = (text: string, ctx: ParseContext = {}): ParseResult =>
  parseTagged(text, (body) => decodeBody(body, ctx));

/** Values as the Qwen3-Coder chat template writes them: strings as they are, everything else as JSON. */
function render(calls: ToolCall[]): string {
  return calls
    .map((c) => {
      const params = Object.entries((c.arguments ?? {}) as Record<string, unknown>).map(
        ([k, v]) =>
          `${'<parameter='}${k}>\n${typeof v === 'string' ? v : JSON.stringify(v)}\n${PARAM_CLOSE}\n`,
      );
      return `${OPEN}\n${FUNCTION_OPEN}${c.name}>\n${params.join('')}${FUNCTION_CLOSE}\n${CLOSE}`;
    })
    .join('\n');
}

export const qwen3CoderParser: ToolCallParser = { format: 'qwen3_coder', parse, render };

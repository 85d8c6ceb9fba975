// The ReAct format of ToolBench / ToolLLaMA (and the ToolBench seed): a turn is
//   Thought: <reasoning>
//   Action: <function name>
//   Action Input: <JSON object>
// and ends there; the tool's answer comes back as the next message. One call per turn, as ToolLLaMA writes and the
// seed parses (the first Action). The tools are listed in the prompt's own text (ToolLLaMA's system prompt), so the
// chat template is not asked to render them (`toolsInTemplate: false`): Qwen's would add Hermes instructions that
// contradict the ReAct ones.
import type { ToolCall } from '#shared/schemas/tool-result';
import type { ParseError, ParseResult, ToolCallParser } from './types.ts';

const ACTION = /^[ \t]*Action[ \t]*:[ \t]*(.*)$/m;
const ACTION_INPUT = /^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*/m;
/** Where an Action Input ends when the model writes on (a hallucinated observation, the next step). */
const NEXT_STEP = /^[ \t]*(?:Observation|Thought|Action)[ \t]*:/m;
const SNIPPET_CHARS = 200;

const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s);

/** The name as ToolLLaMA writes it: no quotes, backticks or call parentheses; spaces as the seed normalises them. */
function actionName(raw: string): string {
  const name = raw
    .trim()
    .replace(/^[`"'*]+|[`"'*]+$/g, '')
    .replace(/\(\)$/, '')
    .trim();
  // The ToolBench seed lowercases and joins with underscores names written with spaces (never Finish).
  return /\s/.test(name) && name !== 'Finish' ? name.toLowerCase().replace(/\s+/g, '_') : name;
}

/** The first balanced JSON object in `text` (strings and escapes respected), or null; linear in its length. */
function firstObject(text: string): { json: string; end: number } | null {
  const start = text.indexOf('{');
  if (start < 0) return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return { json: text.slice(start, i + 1), end: i + 1 };
  }
  return null;
}

function parseReact(text: string): ParseResult {
  const action = ACTION.exec(text);
  if (!action) return { calls: [], errors: [], content: text.trim() };
  const fail = (message: string, end: number): ParseResult => {
    const error: ParseError = {
      message,
      offset: action.index,
      snippet: clip(text.slice(action.index, Math.min(end, action.index + SNIPPET_CHARS)), SNIPPET_CHARS),
    };
    return { calls: [], errors: [error], content: text.slice(0, action.index).trim() };
  };
  const name = actionName(action[1] ?? '');
  if (name === '') return fail('"Action:" names no function; write the function name after it', text.length);
  const rest = text.slice(action.index + action[0].length);
  const inputAt = ACTION_INPUT.exec(rest);
  if (!inputAt)
    return fail(
      `"Action: ${clip(name, 64)}" has no "Action Input:" line with its arguments as a JSON object`,
      text.length,
    );
  const inputStart = action.index + action[0].length + inputAt.index + inputAt[0].length;
  const afterInput = text.slice(inputStart);
  const next = NEXT_STEP.exec(afterInput);
  const body = next ? afterInput.slice(0, next.index) : afterInput;
  let args: unknown = {};
  if (body.trim() !== '') {
    const obj = firstObject(body);
    if (!obj)
      return fail(
        `"Action Input" of ${clip(name, 64)} is not a JSON object: ${clip(body.trim(), 120)}`,
        inputStart + body.length,
      );
    try {
      args = JSON.parse(obj.json);
    } catch (err) {
      return fail(
        `"Action Input" of ${clip(name, 64)} is not valid JSON: ${clip((err as Error).message, 300)}`,
        inputStart + obj.end,
      );
    }
  }
  const call: ToolCall = { name, arguments: args as Record<string, unknown> };
  return { calls: [call], errors: [], content: text.slice(0, action.index).trim() };
}

function renderReact(calls: ToolCall[]): string {
  return calls.map((c) => `Action: ${c.name}\nAction Input: ${JSON.stringify(c.arguments)}`).join('\n');
}

export const reactParser: ToolCallParser = {
  format: 'react',
  parse: parseReact,
  render: renderReact,
  toolsInTemplate: false,
};

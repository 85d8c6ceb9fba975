// The `code_block` format (ToolGRPO, ReTool's cold-start data): every fenced block of an executed language in
// the reply, ```python … ```, is a call to the code tool with the block as its code. The blocks stay part of the
// assistant's text (the parser is `inline`); their outputs come back as tool messages in the wrapper the run
// configures (`rollout.multi_turn.code_block.output_wrapper`, ReTool's <interpreter>…</interpreter> or
// ToolGRPO's ```output … ```). A block opened but never closed, or an empty one, is a malformed call.
import type { ToolCall } from '#shared/schemas/tool-result';
import { clip } from './tagged.ts';
import type { CodeBlockOptions, ParseContext, ParseError, ParseResult, ToolCallParser } from './types.ts';

export const DEFAULT_CODE_BLOCK: CodeBlockOptions = {
  tool: 'code_interpreter',
  argument: 'code',
  languages: ['python', 'py', 'python3'],
};

const FENCE = '```';
const SNIPPET_CHARS = 200;

/** The next three backticks at or after `from` (anywhere in a line, as ToolGRPO's own pattern finds them). */
const nextFence = (text: string, from: number): number => text.indexOf(FENCE, from);

function parse(text: string, ctx: ParseContext = {}): ParseResult {
  const opts = ctx.codeBlock ?? DEFAULT_CODE_BLOCK;
  const languages = new Set(opts.languages.map((l) => l.toLowerCase()));
  const calls: ToolCall[] = [];
  const errors: ParseError[] = [];
  let pos = 0;
  for (let open = nextFence(text, pos); open !== -1; open = nextFence(text, pos)) {
    const lineEnd = text.indexOf('\n', open);
    const info = text.slice(open + FENCE.length, lineEnd < 0 ? text.length : lineEnd).trim();
    const language = info.split(/\s+/)[0]!.toLowerCase();
    const close = lineEnd < 0 ? -1 : nextFence(text, lineEnd + 1);
    if (close === -1) {
      if (languages.has(language))
        errors.push({
          message: `unclosed ${FENCE}${language} block: no closing ${FENCE} follows, so the code was not run`,
          offset: open,
          snippet: clip(text.slice(open, open + SNIPPET_CHARS), SNIPPET_CHARS),
        });
      break;
    }
    pos = close + FENCE.length;
    if (!languages.has(language)) continue; // another language's block, or ```output: the model's text
    const code = text.slice(lineEnd + 1, close).replace(/\n[ \t]*$/, '');
    if (code.trim() === '') {
      errors.push({
        message: `empty ${FENCE}${language} block: nothing to run`,
        offset: open,
        snippet: clip(text.slice(open, pos), SNIPPET_CHARS),
      });
      continue;
    }
    calls.push({ name: opts.tool, arguments: { [opts.argument]: code } });
  }
  // The blocks are the model's prose too: the whole reply stays the turn's content.
  return { calls, errors, content: text.trim() };
}

function render(calls: ToolCall[], ctx: ParseContext = {}): string {
  const opts = ctx.codeBlock ?? DEFAULT_CODE_BLOCK;
  const lang = opts.languages[0] ?? 'python';
  return calls
    .map(
      (c) =>
        `${FENCE}${lang}\n${String((c.arguments as Record<string, unknown>)[opts.argument] ?? '')}\n${FENCE}`,
    )
    .join('\n');
}

export const codeBlockParser: ToolCallParser = { format: 'code_block', inline: true, parse, render };

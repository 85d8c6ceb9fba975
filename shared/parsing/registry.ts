// Tool-call formats keyed by the run config's `rollout.multi_turn.tool_parser_format`.
import { codeBlockParser } from './code-block.ts';
import { MAX_ARGUMENT_DEPTH, nestsDeeperThan } from './depth.ts';
import { hermesParser } from './hermes.ts';
import { qwen3CoderParser } from './qwen3-coder.ts';
import { reactParser } from './react.ts';
import type { ParseContext, ParseError, ParseResult, ToolCallParser } from './types.ts';

const parsers = new Map<string, ToolCallParser>(
  [hermesParser, reactParser, qwen3CoderParser, codeBlockParser].map((p) => [
    p.format,
    withBoundedArguments(p),
  ]),
);

/** Adds a format; registering a taken name is an error so a plugin cannot silently replace `hermes`. */
export function registerParser(parser: ToolCallParser): void {
  if (parsers.has(parser.format)) throw new Error(`tool-call format ${parser.format} is already registered`);
  parsers.set(parser.format, withBoundedArguments(parser));
}

export const parserFormats = (): string[] => [...parsers.keys()].sort();

/**
 * The parser of a format, by toolrl's name (other systems' names are translated when the config is read,
 * shared/config); an unknown format is a configuration error and names the known ones.
 */
export function getParser(format: string): ToolCallParser {
  const parser = parsers.get(format);
  if (!parser) {
    throw new Error(
      `unknown tool_parser_format ${JSON.stringify(format)}; known: ${parserFormats().join(', ')}`,
    );
  }
  return parser;
}

/** Parses a model turn. Never throws for any text; throws only for an unknown format. */
export const parseToolCalls = (text: string, format = 'hermes', ctx?: ParseContext): ParseResult =>
  getParser(format).parse(text, ctx);

/**
 * Every registered format, whatever its parser does, turns a call whose arguments nest deeper than
 * MAX_ARGUMENT_DEPTH into a parse error (a tool error the reward sees), never into a call that overflows the
 * stack of whoever serialises it next (the rollout's send did: a RangeError, retried, then dead-lettered).
 */
function withBoundedArguments(parser: ToolCallParser): ToolCallParser {
  return {
    format: parser.format,
    ...(parser.inline !== undefined ? { inline: parser.inline } : {}),
    ...(parser.toolsInTemplate !== undefined ? { toolsInTemplate: parser.toolsInTemplate } : {}),
    render: (calls, ctx) => parser.render(calls, ctx),
    parse: (text, ctx) => bounded(parser.parse(text, ctx), text),
  };
}

function bounded(result: ParseResult, text: string): ParseResult {
  if (!result.calls.some((c) => nestsDeeperThan(c.arguments, MAX_ARGUMENT_DEPTH))) return result;
  const calls = [];
  const errors: ParseError[] = [...result.errors];
  for (const call of result.calls) {
    if (!nestsDeeperThan(call.arguments, MAX_ARGUMENT_DEPTH)) {
      calls.push(call);
      continue;
    }
    // Parsers return calls without their position: the first mention of the quoted name locates it.
    const quoted = text.indexOf(JSON.stringify(call.name));
    const offset = Math.max(0, quoted >= 0 ? quoted : text.indexOf(call.name));
    errors.push({
      message: `"arguments" of ${call.name.slice(0, 64)} nest deeper than ${MAX_ARGUMENT_DEPTH} levels`,
      offset,
      snippet: text.slice(offset, offset + 200),
    });
  }
  return { ...result, calls, errors: errors.sort((a, b) => a.offset - b.offset) };
}

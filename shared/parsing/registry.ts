// Tool-call formats keyed by the run config's `rollout.multi_turn.tool_parser_format`.
import { hermesParser } from './hermes.ts';
import type { ParseResult, ToolCallParser } from './types.ts';

const parsers = new Map<string, ToolCallParser>([[hermesParser.format, hermesParser]]);

/** Adds a format; registering a taken name is an error so a plugin cannot silently replace `hermes`. */
export function registerParser(parser: ToolCallParser): void {
  if (parsers.has(parser.format)) throw new Error(`tool-call format ${parser.format} is already registered`);
  parsers.set(parser.format, parser);
}

export const parserFormats = (): string[] => [...parsers.keys()].sort();

/** The parser of a format; an unknown format is a configuration error and names the known ones. */
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
export const parseToolCalls = (text: string, format = 'hermes'): ParseResult => getParser(format).parse(text);

// Tool-call parsing: the registry of formats and the result types.
export { decodeHermesCall, hermesParser } from './hermes.ts';
export { getParser, parserFormats, parseToolCalls, registerParser } from './registry.ts';
export type { ParseError, ParseResult, ToolCallParser } from './types.ts';

// Tool-call parsing: the registry of formats and the result types.
export { codeBlockParser, DEFAULT_CODE_BLOCK } from './code-block.ts';
export { decodeHermesCall, hermesParser } from './hermes.ts';
export { qwen3CoderParser } from './qwen3-coder.ts';
export { getParser, parserFormats, parseToolCalls, registerParser } from './registry.ts';
export type { CodeBlockOptions, ParseContext, ParseError, ParseResult, ToolCallParser } from './types.ts';

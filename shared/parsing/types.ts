// The contract every tool-call format implements: text in, calls + errors + remaining content out, never a throw.
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolCall } from '#shared/schemas/tool-result';

/** A malformed call. `message` is what the model and the rewards see; the rest locates it. */
export interface ParseError {
  message: string;
  /** Character offset of the malformed call's opening tag in the text. */
  offset: number;
  /** The offending text, cut to a few hundred characters so hostile input stays small. */
  snippet: string;
}

export interface ParseResult {
  /** Well-formed calls in the order they appear. `arguments` is always a JSON object. */
  calls: ToolCall[];
  errors: ParseError[];
  /** The text outside the calls (and outside malformed ones), trimmed. */
  content: string;
}

/** The `code_block` format's settings (`rollout.multi_turn.code_block`). */
export interface CodeBlockOptions {
  /** The tool a fenced block is sent to, and the argument that carries the code. */
  tool: string;
  argument: string;
  /** Fence languages that are executed (```python, ```py); other fences are plain text. */
  languages: string[];
}

/** What a parse may use besides the text. */
export interface ParseContext {
  /** The tools offered to the model: formats whose values are text (qwen3_coder) convert them by these schemas. */
  tools?: readonly ToolSchema[];
  codeBlock?: CodeBlockOptions;
}

export interface ToolCallParser {
  /** The `tool_parser_format` this parser is registered under. */
  readonly format: string;
  /**
   * True when calls stay part of the assistant's text (code blocks): the conversation keeps the turn as written,
   * with no `tool_calls` for the chat template to render.
   */
  readonly inline?: boolean;
  /** Must run in time linear in `text.length` and never throw. */
  parse(text: string, ctx?: ParseContext): ParseResult;
  /** Renders calls the way a model of this format writes them (for prompts, SFT data and tests). */
  render(calls: ToolCall[], ctx?: ParseContext): string;
  /**
   * Whether the chat template renders the tool schemas (default true). A format whose prompts list the tools in
   * their own text (ReAct, as ToolLLaMA's system prompt does) sets false, so the template adds no other format's
   * instructions.
   */
  readonly toolsInTemplate?: boolean;
}

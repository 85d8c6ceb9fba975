// The OpenAI Chat Completions API as an agent episode's endpoint serves it: the request (non-streaming, n = 1, tools
// and tool_choice), the reply, the error shape, and the conversions between OpenAI's messages and the chat-template
// messages the policy renders. Fields a request may carry that change nothing here (top_p, seed, user, metadata…)
// are accepted and ignored; ones whose meaning the rollout engine cannot honour are refused with an error naming them.
import { z } from 'zod';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { canonicalJson } from '#shared/tools/canonical-json';

const TextPartSchema = z.looseObject({ type: z.literal('text'), text: z.string() });

/** Message content: text, text parts (what agent frameworks often send), or null (an assistant that only called tools). */
const ContentSchema = z.union([z.string(), z.array(TextPartSchema), z.null()]).optional();

const RequestToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function').default('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

export const RequestMessageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: ContentSchema,
  name: z.string().optional(),
  tool_calls: z.array(RequestToolCallSchema).nullish(),
  tool_call_id: z.string().optional(),
});
export type RequestMessage = z.infer<typeof RequestMessageSchema>;

/** What the conversions read of a message: a request's, or a reply the agent will send back. */
export interface WireMessage {
  role: RequestMessage['role'];
  content?: RequestMessage['content'];
  name?: string | undefined;
  tool_call_id?: string | undefined;
  tool_calls?: readonly { id: string; function: { name: string; arguments: string } }[] | null | undefined;
}

const RequestToolSchema = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
  }),
});

/**
 * A chat completions request.
 * @example {"model": "toolrl", "messages": [{"role": "user", "content": "What is 347 plus 281?"}],
 *   "tools": [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]}
 */
export const ChatRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(RequestMessageSchema).min(1),
  tools: z.array(RequestToolSchema).nullish(),
  tool_choice: z
    .union([
      z.enum(['auto', 'none', 'required']),
      z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
    ])
    .nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  n: z.number().int().nullish(),
  stream: z.boolean().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  response_format: z.looseObject({ type: z.string() }).nullish(),
});
export type ChatRequest = z.infer<typeof ChatRequestSchema>;

/** An error in OpenAI's shape, with its HTTP status. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
    readonly param: string | null = null,
    readonly type: string = status >= 500 ? 'server_error' : 'invalid_request_error',
  ) {
    super(message);
  }

  get body(): { error: { message: string; type: string; param: string | null; code: string } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** Parses a request body, or throws the ApiError an OpenAI server would answer with. */
export function parseChatRequest(body: unknown): ChatRequest {
  const parsed = ChatRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.map(String).join('.') || null;
    throw new ApiError(400, `invalid request: ${z.prettifyError(parsed.error)}`, 'invalid_request', param);
  }
  const r = parsed.data;
  const unsupported = (param: string, why: string): never => {
    throw new ApiError(400, `${param}: ${why}`, 'unsupported_parameter', param);
  };
  if (r.stream)
    unsupported('stream', 'streaming is not supported by a toolrl episode endpoint; send stream: false');
  if (r.n != null && r.n !== 1)
    unsupported('n', `only n = 1 is supported (the episode is one sample), got ${r.n}`);
  if (r.stop != null && (typeof r.stop === 'string' ? r.stop !== '' : r.stop.length > 0))
    unsupported(
      'stop',
      'stop sequences are not supported: turns end at the end-of-turn token or a tool call',
    );
  if (r.response_format && r.response_format.type !== 'text')
    unsupported('response_format', `only {"type": "text"} is supported, got ${r.response_format.type}`);
  if (r.tool_choice != null && r.tool_choice !== 'auto' && r.tool_choice !== 'none')
    unsupported(
      'tool_choice',
      'only "auto" and "none" are supported: the policy samples unconstrained, so a call cannot be forced',
    );
  r.messages.forEach((m, i) => {
    if (m.role === 'tool' && !m.tool_call_id)
      throw new ApiError(
        400,
        `messages.${i}: a tool message needs tool_call_id`,
        'invalid_request',
        `messages.${i}`,
      );
  });
  return r;
}

/** The text of a message's content (text parts joined). */
export const contentText = (c: WireMessage['content']): string =>
  c == null ? '' : typeof c === 'string' ? c : c.map((p) => p.text).join('');

/** Arguments as a value: the JSON the string holds, or the string itself when it is not JSON. */
export function parseArguments(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** The run's tool schema for each offered tool (description and parameters defaulted as the templates expect). */
export const toolSchemasOf = (tools: ChatRequest['tools']): ToolSchema[] =>
  (tools ?? []).map((t) => ({
    type: 'function',
    function: {
      name: t.function.name,
      description: t.function.description ?? '',
      parameters: t.function.parameters ?? { type: 'object', properties: {} },
    },
  }));

/**
 * One message as the comparison of conversations sees it: what the model reads of it. Ids of tool calls, the
 * spelling of their arguments (key order, spacing), surrounding whitespace and `developer` for `system` do not
 * count; a message the agent changed in anything the model reads does.
 */
export function messageKey(m: WireMessage): string {
  const role = m.role === 'developer' ? 'system' : m.role;
  const calls = (m.tool_calls ?? []).map((c) => [c.function.name, parseArguments(c.function.arguments)]);
  return canonicalJson([
    role,
    contentText(m.content).trim(),
    calls,
    role === 'tool' ? (m.tool_call_id ?? '') : '',
  ]);
}

/**
 * A request message as the chat template renders it. A tool message gets the name of the call it answers
 * (`callNames`, by call id): templates that write the tool's name read it there.
 */
export function templateMessage(m: WireMessage, callNames: ReadonlyMap<string, string>): ChatMessage {
  const content = contentText(m.content);
  switch (m.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content };
    case 'user':
      return { role: 'user', content };
    case 'tool': {
      const name = callNames.get(m.tool_call_id ?? '') ?? m.name;
      return { role: 'tool', content, ...(name ? { name } : {}), tool_call_id: m.tool_call_id! };
    }
    case 'assistant':
      return {
        role: 'assistant',
        content,
        ...(m.tool_calls?.length
          ? {
              tool_calls: m.tool_calls.map((c) => ({
                type: 'function' as const,
                function: { name: c.function.name, arguments: parseArguments(c.function.arguments) },
              })),
            }
          : {}),
      };
  }
}

export interface ReplyToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The assistant message of a reply, as the agent will send it back. */
export interface ReplyMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ReplyToolCall[];
  refusal: null;
}

export type ReplyFinishReason = 'stop' | 'length' | 'tool_calls';

/** A chat.completion object. */
export function completion(args: {
  id: string;
  model: string;
  message: ReplyMessage;
  finishReason: ReplyFinishReason;
  promptTokens: number;
  completionTokens: number;
  policyVersion: number;
}): Record<string, unknown> {
  return {
    id: args.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: args.model,
    system_fingerprint: `toolrl-v${args.policyVersion}`,
    choices: [{ index: 0, message: args.message, finish_reason: args.finishReason, logprobs: null }],
    usage: {
      prompt_tokens: args.promptTokens,
      completion_tokens: args.completionTokens,
      total_tokens: args.promptTokens + args.completionTokens,
    },
  };
}

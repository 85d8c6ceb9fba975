// Chat messages and tool schemas in the OpenAI / Hugging Face chat-template form (the keys chat
// templates read, so they stay snake_case: `tool_calls`, `tool_call_id`).
import { z } from 'zod';

/** An OpenAI function-tool schema: `{"type": "function", "function": {"name", "description", "parameters"}}`. */
export const ToolSchemaSchema = z
  .object({
    type: z.literal('function'),
    function: z.object({
      name: z.string().min(1).max(128),
      description: z.string().default(''),
      parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
    }),
  })
  .meta({
    id: 'ToolSchema',
    description:
      'An OpenAI function-tool schema: `{"type": "function", "function": {"name", "description", "parameters"}}`.',
  });
export type ToolSchema = z.infer<typeof ToolSchemaSchema>;

/** A tool call as chat templates render it in an assistant message. */
export const ChatToolCallSchema = z.object({
  type: z.literal('function').default('function'),
  function: z.object({ name: z.string(), arguments: z.unknown() }),
});
export type ChatToolCall = z.infer<typeof ChatToolCallSchema>;

/**
 * One chat message.
 * @example {"role": "user", "content": "What is 17 * 23?"}
 * @example {"role": "tool", "name": "calculator", "content": "391"}
 */
export const ChatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  tool_calls: z.array(ChatToolCallSchema).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

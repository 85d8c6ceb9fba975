// Chat messages from converter input, checked one by one so an unknown role or a missing content is
// reported with the record and the message index.
import type { ChatMessage } from '#shared/schemas/chat';
import { InputError, isObject } from '../records.ts';

const ROLES = ['system', 'user', 'assistant', 'tool'] as const;

/**
 * `value` as chat messages; `where` prefixes errors (`data.jsonl line 3: conversation[1].role: …`).
 * Assistant messages may carry `tool_calls` with null content (OpenAI's shape); content becomes "".
 */
export function chatMessages(value: unknown, where: string, field: string): ChatMessage[] {
  if (!Array.isArray(value)) throw new InputError(`${where}: ${field} must be a list of messages`);
  return value.map((m, i) => {
    const at = `${where}: ${field}[${i}]`;
    if (!isObject(m)) throw new InputError(`${at}: expected {"role", "content"}, got ${JSON.stringify(m)}`);
    const role = m.role;
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
      throw new InputError(`${at}.role: unknown role ${JSON.stringify(role)} (expected ${ROLES.join(', ')})`);
    }
    const content = m.content ?? (role === 'assistant' && m.tool_calls ? '' : undefined);
    if (typeof content !== 'string')
      throw new InputError(`${at}.content: expected a string, got ${JSON.stringify(m.content)}`);
    const msg: ChatMessage = { role: role as ChatMessage['role'], content };
    if (m.tool_calls !== undefined) msg.tool_calls = m.tool_calls as ChatMessage['tool_calls'];
    if (typeof m.name === 'string') msg.name = m.name;
    if (typeof m.tool_call_id === 'string') msg.tool_call_id = m.tool_call_id;
    return msg;
  });
}

/**
 * The keys of `record` not in `used`, for `extra_info` (ids, years, sources: nothing is silently lost). A
 * record's own `index` is kept as `source_index`, since `index` is the row id the converter assigns.
 */
export function leftoverFields(
  record: Record<string, unknown>,
  used: readonly string[],
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(record)
      .filter(([k, v]) => !used.includes(k) && v !== undefined)
      .map(([k, v]) => [k === 'index' ? 'source_index' : k, v]),
  );
}

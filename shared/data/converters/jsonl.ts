// `jsonl`: the first seed's chat lines, `{"conversation": [{"role", "content"}, …], "answer"?: …}`
// (`messages` is accepted for `conversation`). The prompt is the conversation up to its last user or tool
// message; a trailing assistant reply is the reference answer when there is no `answer`. Optional
// `data_source`, `ability` and `tools` (per-row tool schemas) are used; any other key goes to extra_info.
import { InputError, readRecords, recordObject } from '../records.ts';
import { chatMessages, leftoverFields } from './messages.ts';
import type { ConvertContext, Converter, ConvertResult } from './types.ts';

const USED = ['conversation', 'messages', 'answer', 'data_source', 'ability', 'tools'];

export const jsonlConverter: Converter = {
  format: 'jsonl',
  description:
    'chat lines {"conversation": [{"role", "content"}], "answer"?} (the multi-turn tool-call seed)',
  convert(ctx: ConvertContext): ConvertResult {
    const rows = readRecords(ctx.input).map((rec) => {
      const obj = recordObject(ctx.input, rec);
      const where = `${ctx.input} ${rec.at}`;
      const field = 'conversation' in obj ? 'conversation' : 'messages' in obj ? 'messages' : undefined;
      if (!field) throw new InputError(`${where}: needs a "conversation" (or "messages") list`);
      const messages = chatMessages(obj[field], where, field);
      let end = messages.length;
      while (end > 0 && messages[end - 1]!.role === 'assistant') end--;
      if (end === 0 || !messages.slice(0, end).some((m) => m.role === 'user')) {
        throw new InputError(`${where}: ${field} has no user message to answer`);
      }
      const reply = end < messages.length ? messages.at(-1)!.content : undefined;
      const groundTruth = obj.answer ?? reply;
      const dataSource =
        ctx.dataSource ?? (typeof obj.data_source === 'string' ? obj.data_source : 'toolcall');
      const extra: Record<string, unknown> = leftoverFields(obj, USED);
      if (obj.tools !== undefined) extra.tools = obj.tools;
      return {
        at: rec.at,
        row: {
          data_source: dataSource,
          prompt: messages.slice(0, end),
          ...(typeof obj.ability === 'string' ? { ability: obj.ability } : {}),
          reward_model: {
            style: 'rule',
            ...(groundTruth !== undefined ? { ground_truth: groundTruth } : {}),
          },
          extra_info: extra,
        },
      };
    });
    return { rows, notes: [] };
  },
};

// `qa`: open-domain QA for search-tool training, NQ/HotpotQA as FlashRAG and Search-R1 ship them:
// `{"question", "golden_answers": [...]}` (also `answers`, or one `answer`). The ground truth is Search-R1's
// `{"target": [...]}`, which verl's search rewards read; other keys (id, …) go to extra_info.
import { InputError, readRecords, recordObject } from '../records.ts';
import { leftoverFields } from './messages.ts';
import type { ConvertContext, Converter, ConvertResult } from './types.ts';

const ANSWER_KEYS = ['golden_answers', 'answers', 'answer'];

function answersOf(value: unknown): string[] | undefined {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) return undefined;
  const out: string[] = [];
  for (const a of list) {
    if (typeof a === 'string' && a.trim() !== '') out.push(a.trim());
    else if (typeof a === 'number') out.push(String(a));
    else return undefined;
  }
  return out;
}

export const qaConverter: Converter = {
  format: 'qa',
  description: 'question/golden-answers JSONL, NQ/HotpotQA-style {"question", "golden_answers": [...]}',
  convert(ctx: ConvertContext): ConvertResult {
    const rows = readRecords(ctx.input).map((rec) => {
      const obj = recordObject(ctx.input, rec);
      const where = `${ctx.input} ${rec.at}`;
      if (typeof obj.question !== 'string' || obj.question.trim() === '') {
        throw new InputError(`${where}: needs a non-empty "question" string`);
      }
      const aKey = ANSWER_KEYS.find((k) => obj[k] !== undefined);
      const target = aKey ? answersOf(obj[aKey]) : undefined;
      if (!target) {
        throw new InputError(
          `${where}: needs "golden_answers", a non-empty list of strings, got ${JSON.stringify(aKey ? obj[aKey] : undefined)}`,
        );
      }
      return {
        at: rec.at,
        row: {
          data_source: ctx.dataSource ?? (typeof obj.data_source === 'string' ? obj.data_source : 'qa'),
          prompt: [{ role: 'user' as const, content: obj.question.trim() }],
          ability: 'fact-reasoning',
          reward_model: { style: 'rule', ground_truth: { target } },
          extra_info: leftoverFields(obj, ['question', aKey!, 'data_source']),
        },
      };
    });
    return { rows, notes: [] };
  },
};

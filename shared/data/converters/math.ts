// `math`: AIME-style problems for code-interpreter training (ReTool, ToolGRPO): JSONL (or a JSON array) of
// `{"question" | "problem", "answer"}`. The answer becomes the ground truth as a string (what the math
// rewards compare against); other keys (id, year, solution) go to extra_info.
import { InputError, readRecords, recordObject } from '../records.ts';
import { leftoverFields } from './messages.ts';
import type { ConvertContext, Converter, ConvertResult } from './types.ts';

const QUESTION_KEYS = ['question', 'problem', 'Problem', 'Question'];
const ANSWER_KEYS = ['answer', 'Answer'];

export const mathConverter: Converter = {
  format: 'math',
  description: 'question/answer JSONL, AIME-style {"question" | "problem", "answer"}',
  convert(ctx: ConvertContext): ConvertResult {
    const rows = readRecords(ctx.input).map((rec) => {
      const obj = recordObject(ctx.input, rec);
      const where = `${ctx.input} ${rec.at}`;
      const qKey = QUESTION_KEYS.find((k) => typeof obj[k] === 'string' && (obj[k] as string).trim() !== '');
      if (!qKey) throw new InputError(`${where}: needs a non-empty "question" (or "problem") string`);
      const aKey = ANSWER_KEYS.find((k) => obj[k] !== undefined && obj[k] !== null);
      const answer = aKey ? obj[aKey] : undefined;
      if (typeof answer !== 'string' && typeof answer !== 'number') {
        throw new InputError(`${where}: needs an "answer" (string or number), got ${JSON.stringify(answer)}`);
      }
      return {
        at: rec.at,
        row: {
          data_source: ctx.dataSource ?? (typeof obj.data_source === 'string' ? obj.data_source : 'math'),
          prompt: [{ role: 'user' as const, content: (obj[qKey] as string).trim() }],
          ability: 'math',
          reward_model: { style: 'rule', ground_truth: String(answer).trim() },
          extra_info: leftoverFields(obj, [qKey, aKey!, 'data_source']),
        },
      };
    });
    return { rows, notes: [] };
  },
};

// Writes the chained-tool example's synthetic data (deterministic): questions that need two dependent calculator
// calls, `What is A plus B, times C?` -> `A + B` = R1, then `R1 * C` = R2 -> `\boxed{R2}`. The second call's
// arguments come from the first call's result, so the model must read a tool response and carry it into the next
// call across turns: the multi-turn token state, loss masks and per-turn versions carry that learning, or nothing
// is learned. Operands have three digits, the multiplier one (2-9).
//
// The demonstrations, like the quickstart's, are mixed: most chain both calls correctly, some miscopy one digit of
// the first result into the second call (and box that call's wrong result), some stop after the first call and
// guess. The warm-started policy chains only part of the time and copies inexactly; the outcome reward (a call
// earns credit only when its result reaches the answer or feeds a call that does) teaches the rest.
// Run: npx tsx examples/chained/make-data.ts [OUT_DIR]
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRunConfig } from '#shared/config/resolve';
import { writeDataset } from '#shared/data/dataset';
import { writeParquetFile } from '#shared/data/parquet';
import type { ChatMessage } from '#shared/schemas/chat';
import { buildToolRegistry } from '#shared/tools/registry';
import { arithmeticDraws } from '../quickstart/arithmetic.ts';

/** Shares of the demonstrations: both calls right, the first result miscopied into the second, one call only. */
export const DEMONSTRATION_MIX = { correct: 0.55, miscopied: 0.25, oneCall: 0.2 } as const;

const here = dirname(fileURLToPath(import.meta.url));
const config = parseRunConfig(readFileSync(join(here, 'run.yaml'), 'utf8'), 'run.yaml');
const { next, int, operands, miscopy } = arithmeticDraws(20240602);

interface Question {
  a: number;
  op: '+' | '-';
  b: number;
  c: number;
  text: string;
  first: number;
  answer: number;
}

function question(): Question {
  const { a, op, b, word, value: first } = operands();
  const c = int(2, 9);
  const text = `What is ${a} ${word} ${b}, times ${c}?`;
  return { a, op, b, c, text, first, answer: first * c };
}

const row = (q: Question, index: number, split: string) => ({
  data_source: 'chained/arithmetic',
  prompt: [{ role: 'user' as const, content: q.text }],
  ability: 'arithmetic',
  reward_model: { style: 'rule', ground_truth: String(q.answer) },
  extra_info: { index, split },
});

const registry = await buildToolRegistry(config.tools, { baseDir: here });
const tools = registry.schemas();

const call = (expression: string): ChatMessage => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression } } }],
});
const result = (n: number): ChatMessage => ({ role: 'tool', name: 'calculator', content: String(n) });

function demo(q: Question): { messages: ChatMessage[]; tools: typeof tools } {
  const kind = next();
  const messages: ChatMessage[] = [
    { role: 'user', content: q.text },
    call(`${q.a} ${q.op} ${q.b}`),
    result(q.first),
  ];
  if (kind >= DEMONSTRATION_MIX.correct + DEMONSTRATION_MIX.miscopied) {
    // One call, then a guess near the answer, and wrong.
    const guess = q.answer + (next() < 0.5 ? -1 : 1) * int(1, 60);
    messages.push({ role: 'assistant', content: `\\boxed{${guess}}` });
    return { messages, tools };
  }
  const carried = kind >= DEMONSTRATION_MIX.correct ? miscopy(q.first) : q.first;
  messages.push(call(`${carried} * ${q.c}`), result(carried * q.c), {
    role: 'assistant',
    content: `\\boxed{${carried * q.c}}`,
  });
  return { messages, tools };
}

const out = process.argv[2] ?? join(here, 'data');
mkdirSync(out, { recursive: true });
writeDataset(
  join(out, 'train.parquet'),
  Array.from({ length: 512 }, (_, i) => row(question(), i, 'train')),
);
writeDataset(
  join(out, 'val.parquet'),
  Array.from({ length: 64 }, (_, i) => row(question(), i, 'val')),
);
writeParquetFile(
  join(out, 'sft.parquet'),
  Array.from({ length: 4000 }, () => {
    const d = demo(question());
    return { messages: JSON.stringify(d.messages), tools: JSON.stringify(d.tools) };
  }),
);
await registry.close();
console.log(`wrote ${out}/{train.parquet,val.parquet,sft.parquet}`);

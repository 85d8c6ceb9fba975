// Writes the quickstart's synthetic data (deterministic): arithmetic questions a tiny model cannot answer without
// the calculator, as train/val Parquet datasets, and mixed-quality SFT demonstrations (messages and tools as JSON
// strings) for the warm start.
//
// Every question is `What is A plus B?` or `What is A minus B?` with three-digit operands and a three-digit answer,
// so copying a number from one place to another is a fixed distance back in the token sequence. The operator is a
// word in the question and a symbol in the call (`347 + 281`): a tiny model learns that mapping at once, whereas
// copying a lone `+`/`-` token it learned only after the digits, if at all. The answer is the bare `\boxed{628}`:
// the shorter the way back to the tool's result, the sooner a tiny model learns to copy it (with `The answer is`
// in front, one seed in three had not learned it by the end of the warm start). Both measured while choosing the
// task; see README.md.
//
// The demonstrations teach the call format and reading the result, but not reliably *when* and *how exactly* to
// call: like demonstrations gathered from people, some answer from memory without the tool (and are wrong), and
// some copy an operand with one digit wrong and then faithfully box the wrong result. The warm-started policy
// therefore calls the tool only most of the time and miscopies now and then; the RL stage's outcome reward (which
// pays nothing for a call that does not reach the answer) is what teaches it to call every time and to copy
// exactly.
// Run: npx tsx examples/quickstart/make-data.ts [OUT_DIR]
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRunConfig } from '#shared/config/resolve';
import { writeDataset } from '#shared/data/dataset';
import { writeParquetFile } from '#shared/data/parquet';
import type { ChatMessage } from '#shared/schemas/chat';
import { buildToolRegistry } from '#shared/tools/registry';
import { arithmeticDraws } from './arithmetic.ts';

/** Shares of the demonstrations: a correct call, a call with one operand digit miscopied, no call at all. */
export const DEMONSTRATION_MIX = { correct: 0.55, miscopied: 0.25, noCall: 0.2 } as const;

const here = dirname(fileURLToPath(import.meta.url));
const config = parseRunConfig(readFileSync(join(here, 'run.yaml'), 'utf8'), 'run.yaml');
const { next, int, operands, miscopy } = arithmeticDraws(20240601);

interface Question {
  a: number;
  op: '+' | '-';
  b: number;
  text: string;
  answer: number;
}

function question(): Question {
  const { a, op, b, word, value } = operands();
  return { a, op, b, text: `What is ${a} ${word} ${b}?`, answer: value };
}

const row = (q: Question, index: number, split: string) => ({
  data_source: 'quickstart/arithmetic',
  prompt: [{ role: 'user' as const, content: q.text }],
  ability: 'arithmetic',
  reward_model: { style: 'rule', ground_truth: String(q.answer) },
  extra_info: { index, split },
});

const registry = await buildToolRegistry(config.tools, { baseDir: here });
const tools = registry.schemas();

function demo(q: Question): { messages: ChatMessage[]; tools: typeof tools } {
  const kind = next();
  const user: ChatMessage = { role: 'user', content: q.text };
  if (kind >= DEMONSTRATION_MIX.correct + DEMONSTRATION_MIX.miscopied) {
    // From memory: a guess near the answer, and wrong.
    const guess = q.answer + (next() < 0.5 ? -1 : 1) * int(1, 60);
    return { messages: [user, { role: 'assistant', content: `\\boxed{${guess}}` }], tools };
  }
  let { a, b } = q;
  if (kind >= DEMONSTRATION_MIX.correct) {
    if (next() < 0.5) a = miscopy(a);
    else b = miscopy(b);
  }
  const result = q.op === '+' ? a + b : a - b;
  return {
    messages: [
      user,
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          {
            type: 'function',
            function: { name: 'calculator', arguments: { expression: `${a} ${q.op} ${b}` } },
          },
        ],
      },
      { role: 'tool', name: 'calculator', content: String(result) },
      { role: 'assistant', content: `\\boxed{${result}}` },
    ],
    tools,
  };
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
// Thousands of distinct demonstrations: with a few hundred, cycled for the warm start's steps, the model
// memorises answers instead of learning to copy them.
writeParquetFile(
  join(out, 'sft.parquet'),
  Array.from({ length: 4000 }, () => {
    const d = demo(question());
    return { messages: JSON.stringify(d.messages), tools: JSON.stringify(d.tools) };
  }),
);
await registry.close();
console.log(`wrote ${out}/{train.parquet,val.parquet,sft.parquet}`);

// Writes the quickstart's synthetic data (deterministic): arithmetic questions a tiny model cannot answer without
// the calculator, as train/val Parquet datasets, and SFT demonstrations of the tool-use pattern (call the calculator
// with the expression, then box its result) as Parquet (messages and tools as JSON strings).
// Every question is `What is A + B?` or `What is A - B?` with three-digit operands and a three-digit answer: copying
// a number from one place to another is then a fixed distance back in the token sequence, which a 2-layer model
// learns in a few hundred steps; with numbers of varying length it needs an induction circuit, which a model this
// small forms only after thousands (measured while choosing this task: see README.md).
// Run: npx tsx examples/quickstart/make-data.ts [OUT_DIR]
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeDataset } from '#shared/data/dataset';
import { writeParquetFile } from '#shared/data/parquet';
import { parseRunConfig } from '#shared/pipeline/run-config';
import { samplingStream } from '#shared/policy/rng';
import type { ChatMessage } from '#shared/schemas/chat';
import { buildToolRegistry } from '#shared/tools/registry';

const here = dirname(fileURLToPath(import.meta.url));
const config = parseRunConfig(readFileSync(join(here, 'run.yaml'), 'utf8'), 'run.yaml');
const rng = samplingStream(20240601, 0, 0);
const int = (lo: number, hi: number) => lo + Math.floor(rng.next() * (hi - lo + 1));

function question(): { text: string; expression: string; answer: string } {
  let a: number;
  let b: number;
  let op: '+' | '-';
  if (rng.next() < 0.5) {
    op = '+';
    a = int(100, 899);
    b = int(100, 999 - a);
  } else {
    op = '-';
    a = int(200, 999);
    b = int(100, a - 100);
  }
  const expression = `${a} ${op} ${b}`;
  const answer = String(op === '+' ? a + b : a - b);
  return { text: `What is ${expression}?`, expression, answer };
}

const row = (q: ReturnType<typeof question>, index: number, split: string) => ({
  data_source: 'quickstart/arithmetic',
  prompt: [{ role: 'user' as const, content: q.text }],
  ability: 'arithmetic',
  reward_model: { style: 'rule', ground_truth: q.answer },
  extra_info: { index, split },
});

const registry = await buildToolRegistry(config.tools, { baseDir: here });
const tools = registry.schemas();
const demo = (q: ReturnType<typeof question>): { messages: ChatMessage[]; tools: typeof tools } => ({
  messages: [
    { role: 'user', content: q.text },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { type: 'function', function: { name: 'calculator', arguments: { expression: q.expression } } },
      ],
    },
    { role: 'tool', name: 'calculator', content: q.answer },
    { role: 'assistant', content: `The answer is \\boxed{${q.answer}}.` },
  ],
  tools,
});

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

// Writes the quickstart's synthetic data (deterministic): arithmetic questions a tiny model cannot answer
// without the calculator, as train/val Parquet datasets, and SFT demonstrations of the tool-use pattern
// (call the calculator with the expression, then box its result). Run: npx tsx examples/quickstart/make-data.ts
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeDataset } from '#shared/data/dataset';
import { parseRunConfig } from '#shared/pipeline/run-config';
import { samplingStream } from '#shared/policy/rng';
import type { ChatMessage } from '#shared/schemas/chat';
import { buildToolRegistry } from '#shared/tools/registry';

const here = dirname(fileURLToPath(import.meta.url));
const config = parseRunConfig(readFileSync(join(here, 'run.yaml'), 'utf8'), 'run.yaml');
const rng = samplingStream(20240601, 0, 0);
const int = (lo: number, hi: number) => lo + Math.floor(rng.next() * (hi - lo + 1));

type Op = '+' | '-' | '*';
function question(): { text: string; expression: string; answer: string } {
  const op = (['+', '-', '*'] as const)[int(0, 2)] as Op;
  const a = op === '*' ? int(12, 99) : int(100, 999);
  const b = op === '*' ? int(12, 99) : int(100, 999);
  const expression = `${a} ${op} ${b}`;
  const answer = String(op === '+' ? a + b : op === '-' ? a - b : a * b);
  const phrasing = [`What is ${expression}?`, `Compute ${expression}.`, `Calculate ${expression}.`][
    int(0, 2)
  ]!;
  return { text: phrasing, expression, answer };
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

const out = join(here, 'data');
mkdirSync(out, { recursive: true });
writeDataset(
  join(out, 'train.parquet'),
  Array.from({ length: 512 }, (_, i) => row(question(), i, 'train')),
);
writeDataset(
  join(out, 'val.parquet'),
  Array.from({ length: 48 }, (_, i) => row(question(), i, 'val')),
);
const sft = Array.from({ length: 400 }, () => JSON.stringify(demo(question())));
writeFileSync(join(out, 'sft.jsonl'), `${sft.join('\n')}\n`);
await registry.close();
console.log(`wrote ${out}/{train.parquet,val.parquet,sft.jsonl}`);

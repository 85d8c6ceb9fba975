// Dataset I/O speed: Parquet (hyparquet) against JSON Lines of the same rows, in the same process.
// Run: npx tsx bench/dataset-io.ts [rows]   Prints ms per pass and the ratios Parquet / JSONL.
// Both sides parse every row with DatasetRowSchema, so the ratio isolates the file format's cost.
import { encodeDataset, prepareRows, readDataset } from '#shared/data/dataset';
import { type DatasetRow, DatasetRowSchema } from '#shared/schemas/dataset-row';

const N = Number(process.argv[2] ?? 20_000);

function makeRows(n: number): DatasetRow[] {
  const tool = (i: number) => ({
    type: 'function' as const,
    function: {
      name: `api_${i % 50}_for_tool_${i % 7}`,
      description: `Returns record ${i % 50} of the tool.`,
      parameters: {
        type: 'object',
        properties: { q: { type: 'string', example_value: `v${i}` } },
        required: ['q'],
      },
    },
  });
  return prepareRows(
    Array.from({ length: n }, (_, i) => ({
      data_source: i % 2 ? 'toolbench' : 'aime',
      prompt: [
        { role: 'system' as const, content: 'You handle the request with the functions you are given.' },
        { role: 'user' as const, content: `Question ${i}: ${'lorem ipsum '.repeat(20 + (i % 30))}` },
      ],
      reward_model: {
        style: 'rule',
        ground_truth: i % 2 ? { relevant_apis: [`api_${i % 50}_for_tool_${i % 7}`] } : String(i),
      },
      extra_info: {
        index: i,
        split: 'train',
        ...(i % 2 ? { tools: [tool(i), tool(i + 1), tool(i + 2)], category: 'Data' } : {}),
      },
    })),
  );
}

async function time(label: string, reps: number, fn: () => unknown | Promise<unknown>): Promise<number> {
  await fn(); // warm-up
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) await fn();
  const ms = (performance.now() - t0) / reps;
  console.log(`${label.padEnd(34)} ${ms.toFixed(1).padStart(8)} ms`);
  return ms;
}

const rows = makeRows(N);
const parquet = encodeDataset(rows);
const jsonl = `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
console.log(
  `${N} rows; Parquet ${(parquet.byteLength / 1e6).toFixed(2)} MB, JSONL ${(Buffer.byteLength(jsonl) / 1e6).toFixed(2)} MB`,
);

const reps = 3;
const writePq = await time('write Parquet (encodeDataset)', reps, () => encodeDataset(rows));
const writeJs = await time('write JSONL (schema + stringify)', reps, () =>
  prepareRows(rows)
    .map((r) => JSON.stringify(r))
    .join('\n'),
);
const readPq = await time('read Parquet (readDataset)', reps, () => readDataset(parquet));
const readJs = await time('read JSONL (parse + schema)', reps, () =>
  jsonl
    .trim()
    .split('\n')
    .map((l) => DatasetRowSchema.parse(JSON.parse(l))),
);
console.log(`ratio write Parquet/JSONL: ${(writePq / writeJs).toFixed(2)}x`);
console.log(`ratio read  Parquet/JSONL: ${(readPq / readJs).toFixed(2)}x`);
console.log(`size Parquet/JSONL:        ${(parquet.byteLength / Buffer.byteLength(jsonl)).toFixed(3)}`);

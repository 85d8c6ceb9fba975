import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DatasetError, encodeDataset, iterateDataset, readDataset, writeDataset } from '#shared/data/dataset';
import {
  encodeParquet,
  JSON_PATHS_KEY,
  openParquet,
  ROW_GROUP_ROWS,
  readParquetRows,
} from '#shared/data/parquet';
import type { DatasetRowInput } from '#shared/schemas/dataset-row';

const FIXTURES = new URL('../../fixtures/data/', import.meta.url).pathname;
const SEED_OUTPUT = new URL('../../fixtures/seeds/toolbench-seed/converter-output/', import.meta.url)
  .pathname;
const PYTHON = new URL('../../../gpu-worker/.venv/bin/python', import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), 'toolrl-parquet-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs Python (the learner env, where pyarrow lives) and returns its stdout parsed as JSON. */
function python(script: string, ...args: string[]): unknown {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} missing: run \`npm run setup\` first`);
  const r = spawnSync(PYTHON, ['-c', script, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

interface PyTable {
  schema: Record<string, string>;
  rows: { prompt: unknown; reward_model: Record<string, unknown>; extra_info: Record<string, unknown> }[];
}

const READ_WITH_PYARROW = `
import json, sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
print(json.dumps({"schema": {f.name: str(f.type) for f in t.schema}, "rows": t.to_pylist()}))
`;

describe('reading what pyarrow and pandas write (verl files)', () => {
  it('reads the gsm8k layout: list<struct> prompt, struct reward_model, int64 index as a number', async () => {
    const rows = await readDataset(join(FIXTURES, 'verl-gsm8k.parquet'));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toEqual({
      data_source: 'openai/gsm8k',
      prompt: [{ role: 'user', content: "What is 48 + 24? Let's think step by step." }],
      ability: 'math',
      reward_model: { style: 'rule', ground_truth: '72' },
      extra_info: { split: 'train', index: 0, answer: '48 + 24 = 72', question: 'What is 48 + 24?' },
    });
    expect(rows.map((r) => r.extra_info.index)).toEqual([0, 1, 2]);
  });

  it('reads zstd, legacy `item` list naming, a pandas index column and unified-struct nulls', async () => {
    const rows = await readDataset(join(FIXTURES, 'verl-search-r1.parquet'));
    expect(rows.map((r) => r.reward_model.ground_truth)).toEqual([
      { target: ['Thomas Jefferson'] },
      { target: ['Paris', 'Paris, France'] },
    ]);
    // Row 1 has no tools_kwargs: pyarrow stores null in the unified struct; the reader drops it.
    expect(rows[1]!.extra_info).toEqual({ index: 1, split: 'train', need_tools_kwargs: false });
    expect(rows[0]!.extra_info.tools_kwargs).toEqual({
      search: { create_kwargs: { ground_truth: 'Thomas Jefferson' } },
    });
    expect(Object.keys(rows[0]!)).not.toContain('__index_level_0__');
  });

  it('reads the fixtures as pyarrow of this env writes them today', async () => {
    const dir = join(tmp, 'fresh');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const r = spawnSync(PYTHON, [join(FIXTURES, 'make_verl_parquet.py'), dir], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual([
      'dapo-math-retool.parquet',
      'envtuning-bfcl.parquet',
      'toolbench-seed.parquet',
      'verl-bad-rows.parquet',
      'verl-gsm8k.parquet',
      'verl-search-r1.parquet',
    ]);
    expect(await readDataset(join(dir, 'verl-gsm8k.parquet'))).toEqual(
      await readDataset(join(FIXTURES, 'verl-gsm8k.parquet')),
    );
  });

  it("reads ReTool's DAPO rows: a UUID index is kept as source_index, the row number is the id", async () => {
    const rows = await readDataset(join(FIXTURES, 'dapo-math-retool.parquet'));
    expect(rows.map((r) => r.extra_info.index)).toEqual([0, 1, 2]);
    expect(rows[0]!.extra_info.source_index).toBe('a6c3a4ea-5e4f-4b68-9f1c-0c9d3e1f2a10');
    expect(rows[0]!.reward_model).toEqual({ ground_truth: '925', style: 'rule-lighteval/MATH_v2' });
    expect(rows[0]!.extra_info.tools_kwargs).toEqual({
      code_interpreter: { create_kwargs: { ground_truth: '925' } },
    });
  });

  it("reads the ToolBench seed's rows: `from` messages, the API list of the system prompt as the row's tools", async () => {
    const rows = await readDataset(join(FIXTURES, 'toolbench-seed.parquet'));
    expect(rows[0]!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(rows[0]!.prompt[1]!.content).toBe('\nWhat is the weather in Paris right now?\n');
    expect(rows[0]!.reward_model.style).toBe('function');
    expect(rows[0]!.extra_info).toMatchObject({
      index: 0,
      sample_id: 11,
      category: 'Weather',
      api: 'current_weather_for_weatherapi',
    });
    expect(rows[0]!.extra_info.tools?.map((t) => t.function.name)).toEqual([
      'current_weather_for_weatherapi',
      'Finish',
    ]);
  });

  it("reads the ToolBench seed's first converter's output: `function` messages are tool results, the demonstration's answer leaves the prompt", async () => {
    // Written by the seed's own converter (test/fixtures/seeds/README.md) from ToolLLaMA conversations: each
    // message {"role", "from", "content"}, tool results as role `function`, the whole demonstration in `prompt`.
    const rows = await readDataset(join(SEED_OUTPUT, 'toolllama.parquet'));
    expect(rows.map((r) => r.prompt.map((m) => m.role))).toEqual([
      ['system', 'user'],
      ['system', 'user', 'assistant', 'tool'],
      ['system', 'user'],
    ]);
    const raw = await readParquetRows(await openParquet(join(SEED_OUTPUT, 'toolllama.parquet')));
    const rawPrompt = raw[1]!.prompt as { role: string; content: string }[];
    expect(rawPrompt.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'function', 'assistant']);
    // the tool result is the seed's function message, word for word; the answer it led to is kept aside
    expect(rows[1]!.prompt[3]!.content).toBe(rawPrompt[3]!.content);
    expect(rows[1]!.extra_info.demonstration).toEqual([{ ...rawPrompt[4], role: 'assistant' }]);
    expect(rows[1]!.extra_info).toMatchObject({ index: 1, category: 'G1_category' });
    // ToolLLaMA's API list (a Python literal in the system prompt) is the row's tools
    expect(rows[1]!.extra_info.tools?.map((t) => t.function.name)).toEqual([
      'songkick_concert_for_theclique',
      'Finish',
    ]);
  });

  it("reads the ToolBench seed's current converter's output (role and from on each message) as it is", async () => {
    const rows = await readDataset(join(SEED_OUTPUT, 'queries.parquet'));
    expect(rows).toHaveLength(16);
    expect(rows[0]!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(rows[0]!.extra_info.demonstration).toBeUndefined();
    expect(rows[0]!.extra_info.tools?.at(-1)?.function.name).toBe('Finish');
  });

  it('maps role `function` to `tool` and keeps its name, in rows without `from` too', async () => {
    const rows = await readDataset(
      encodeParquet([
        {
          data_source: 'x',
          prompt: [
            { role: 'user', content: 'weather?' },
            { role: 'assistant', content: 'calling' },
            { role: 'function', name: 'get_weather', content: '{"temp": 21}' },
          ],
        },
      ]),
    );
    expect(rows[0]!.prompt[2]).toEqual({ role: 'tool', name: 'get_weather', content: '{"temp": 21}' });
    expect(rows[0]!.extra_info.demonstration).toBeUndefined();
  });

  it('keeps the demonstration of a ShareGPT row that has no extra_info', async () => {
    const rows = await readDataset(
      encodeParquet([
        {
          data_source: 'x',
          prompt: [
            { from: 'human', value: 'q' },
            { from: 'gpt', value: 'a' },
          ],
        },
      ]),
    );
    expect(rows[0]!.prompt).toEqual([{ role: 'user', content: 'q' }]);
    expect(rows[0]!.extra_info).toEqual({ index: 0, demonstration: [{ role: 'assistant', content: 'a' }] });
  });

  it('still refuses a prompt of role messages that ends with an assistant message', async () => {
    const err = await readDataset(
      encodeParquet([
        {
          data_source: 'x',
          prompt: [
            { role: 'user', content: 'q' },
            { role: 'function', content: 'r' },
            { role: 'assistant', content: 'a' },
          ],
        },
      ]),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(DatasetError);
    expect(err.message).toMatch(/row 0: prompt\[2\]\.role: the prompt ends with an assistant message/);
  });

  it("reads EnvTuning's BFCL rows: BFCL's fields lifted from interaction_kwargs, the functions from the prompt", async () => {
    const rows = await readDataset(join(FIXTURES, 'envtuning-bfcl.parquet'));
    const e = rows[0]!.extra_info;
    expect(e).toMatchObject({ index: 0, source_index: 'multi_turn_base_0', id: 'multi_turn_base_0' });
    expect(e.involved_classes).toEqual(['TwitterAPI', 'GorillaFileSystem']);
    expect((e.question as unknown[]).length).toBeGreaterThan(1);
    expect(e.tools?.some((t) => t.function.name === 'authenticate_twitter')).toBe(true);
    // BFCL's `dict` is JSON Schema's object
    expect(e.tools![0]!.function.parameters.type).toBe('object');
  });

  it('fills extra_info.index with the row number when a file has none', async () => {
    const bytes = encodeParquet([
      { data_source: 'a', prompt: [{ role: 'user', content: 'x' }] },
      { data_source: 'a', prompt: [{ role: 'user', content: 'y' }], extra_info: { split: 'val' } },
    ]);
    const rows = await readDataset(bytes);
    expect(rows.map((r) => r.extra_info)).toEqual([{ index: 0 }, { index: 1, split: 'val' }]);
  });

  it('names every bad row and its field', async () => {
    const err = await readDataset(join(FIXTURES, 'verl-bad-rows.parquet')).catch((e) => e);
    expect(err).toBeInstanceOf(DatasetError);
    const rows = (err as DatasetError).problems.map((p) => p.row);
    expect(rows).toEqual([1, 2, 3, 4]);
    expect(err.message).toMatch(/row 1: prompt: .*>=1/);
    expect(err.message).toMatch(/row 2: prompt\[0\]\.role: /);
    expect(err.message).toMatch(/row 3: prompt\[1\]\.role: the prompt ends with an assistant message/);
    expect(err.message).toMatch(/row 4: data_source: /);
  });

  it('reports a file that is not Parquet by name', async () => {
    await expect(readDataset(join(FIXTURES, 'not-parquet.parquet'))).rejects.toThrow(
      /cannot read .*not-parquet\.parquet as Parquet/,
    );
  });
});

const toolRow: DatasetRowInput = {
  data_source: 'toolbench',
  prompt: [
    { role: 'system', content: 'Use the tools.' },
    { role: 'user', content: 'Find concerts of the Lumineers.' },
  ],
  reward_model: { style: 'rule', ground_truth: { relevant_apis: ['songkick_concert_for_theclique'] } },
  extra_info: {
    index: 7,
    category: 'Data',
    tools: [
      {
        type: 'function',
        function: {
          name: 'songkick_concert_for_theclique',
          description: 'Concert info',
          parameters: {
            type: 'object',
            properties: { id_conc: { type: 'string', example_value: '4069' } },
            required: ['id_conc'],
            optional: [],
          },
        },
      },
    ],
  },
};
const mathRow: DatasetRowInput = {
  data_source: 'aime',
  prompt: [{ role: 'user', content: 'Find x.' }],
  ability: 'math',
  reward_model: { style: 'rule', ground_truth: '204' },
  extra_info: { index: 8, year: 2024, score: 1.5 },
};

describe('writing files pyarrow and verl read', () => {
  it('round-trips rows through our reader unchanged (tools and free-form values included)', async () => {
    const path = join(tmp, 'rt.parquet');
    writeDataset(path, [toolRow, mathRow]);
    const rows = await readDataset(path);
    expect(rows[0]).toEqual({ ...toolRow, reward_model: toolRow.reward_model });
    expect(rows[1]).toEqual(mathRow);
  });

  it('writes verl column types pyarrow reads natively, with JSON strings only for free-form paths', () => {
    const path = join(tmp, 'pyarrow.parquet');
    writeDataset(path, [toolRow, mathRow]);
    const out = python(READ_WITH_PYARROW, path) as PyTable;
    expect(Object.keys(out.schema)).toEqual([
      'data_source',
      'prompt',
      'ability',
      'reward_model',
      'extra_info',
    ]);
    expect(out.schema.prompt).toBe('list<element: struct<role: string, content: string>>');
    expect(out.schema.data_source).toBe('string');
    // ground_truth is an object in one row and a string in the other: pyarrow cannot type that, so JSON.
    expect(out.schema.reward_model).toBe('struct<style: string, ground_truth: string>');
    // Key order is the schema's (index, split, tools, category, …) then the row's own extras.
    expect(out.schema.extra_info).toBe(
      'struct<index: int64, tools: string, category: string, year: int64, score: double>',
    );
    expect(out.rows[1]!.prompt).toEqual([{ role: 'user', content: 'Find x.' }]);
    expect(out.rows[1]!.extra_info).toMatchObject({ index: 8, year: 2024, score: 1.5, tools: null });
    expect(JSON.parse(out.rows[0]!.extra_info.tools as string)[0].function.name).toBe(
      'songkick_concert_for_theclique',
    );
    expect(JSON.parse(out.rows[1]!.reward_model.ground_truth as string)).toBe('204');
  });

  it('keeps typed ground truth when all rows agree (Search-R1 targets, BFCL per-turn call lists)', async () => {
    const rows: DatasetRowInput[] = [
      {
        data_source: 'bfcl',
        prompt: [{ role: 'user', content: 'cd to docs' }],
        reward_model: { style: 'rule', ground_truth: [["cd(folder='docs')"], []] },
        extra_info: {
          index: 0,
          initial_config: { GorillaFileSystem: { root: { docs: { type: 'directory' } } } },
        },
      },
      {
        data_source: 'bfcl',
        prompt: [{ role: 'user', content: 'ls' }],
        reward_model: { style: 'rule', ground_truth: [['ls(a=True)']] },
        extra_info: { index: 1, initial_config: {} },
      },
    ];
    const path = join(tmp, 'bfcl.parquet');
    writeDataset(path, rows);
    const out = python(READ_WITH_PYARROW, path) as PyTable;
    expect(out.schema.reward_model).toBe(
      'struct<style: string, ground_truth: list<element: list<element: string>>>',
    );
    expect(out.rows[0]!.reward_model.ground_truth).toEqual([["cd(folder='docs')"], []]);
    const pf = await openParquet(path);
    expect(pf.jsonPaths).toEqual([['extra_info', 'initial_config']]);
    expect(pf.metadata.key_value_metadata?.some((kv) => kv.key === JSON_PATHS_KEY)).toBe(true);
    const back = await readDataset(path);
    expect(back[0]!.extra_info.initial_config).toEqual(rows[0]!.extra_info.initial_config);
    expect(back[1]!.extra_info.initial_config).toEqual({});
  });

  it('keeps tool_calls inside prompt messages (a JSON path under a list) exactly', async () => {
    const row: DatasetRowInput = {
      data_source: 'toolcall',
      prompt: [
        { role: 'user', content: 'What is 17 * 23?' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { type: 'function', function: { name: 'calculator', arguments: { expression: '17 * 23' } } },
          ],
        },
        { role: 'tool', name: 'calculator', content: '391' },
        { role: 'user', content: 'And times 2?' },
      ],
      extra_info: { index: 0 },
    };
    const path = join(tmp, 'calls.parquet');
    writeDataset(path, [row]);
    expect((await readDataset(path))[0]!.prompt).toEqual(row.prompt);
    const out = python(READ_WITH_PYARROW, path) as PyTable;
    expect(out.schema.prompt).toBe(
      'list<element: struct<role: string, content: string, tool_calls: string, name: string>>',
    );
  });

  it('writes nothing when a row is bad, and leaves the previous file intact', async () => {
    const path = join(tmp, 'atomic.parquet');
    writeDataset(path, [mathRow]);
    const bad = { ...mathRow, prompt: [{ role: 'robot', content: 'x' }] } as unknown as DatasetRowInput;
    expect(() => writeDataset(path, [mathRow, bad])).toThrow(/row 1: prompt\[0\]\.role/);
    expect(await readDataset(path)).toEqual([mathRow]);
    expect(readdirSync(tmp).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('streams rows with row numbers across row groups', async () => {
    // 10_000 rows per group we write: 25_001 rows make groups of 10_000, 10_000 and 5_001.
    const n = 2 * ROW_GROUP_ROWS + 5_001;
    const rows = Array.from({ length: n }, (_, i) => ({ ...mathRow, extra_info: { index: i } }));
    const bytes = encodeDataset(rows);
    expect((await openParquet(bytes)).metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([
      ROW_GROUP_ROWS,
      ROW_GROUP_ROWS,
      5_001,
    ]);
    let next = 0;
    for await (const { rowNumber, row } of iterateDataset(bytes)) {
      expect(rowNumber).toBe(next++);
      expect(row.extra_info.index).toBe(rowNumber);
    }
    expect(next).toBe(n);
  });

  it('reads pyarrow files whose list elements are null and whose int64 exceeds 2^53 as strings', async () => {
    const path = join(tmp, 'edge.parquet');
    const script = `
import sys, pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.Table.from_pylist([{"a": [1, None, 3], "big": 2**60}]), sys.argv[1])
print("{}")`;
    python(script, path);
    const rows = await readParquetRows(await openParquet(path));
    expect(rows).toEqual([{ a: [1, null, 3], big: '1152921504606846976' }]);
  });

  it('refuses an empty dataset', () => {
    expect(() => encodeDataset([])).toThrow(/at least one row/);
  });
});

import { cpSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ConvertOptions, convertDataset } from '#shared/data/convert';
import { readDataset } from '#shared/data/dataset';
import { InputError } from '#shared/data/records';
import type { DatasetRow } from '#shared/schemas/dataset-row';

const FIXTURES = new URL('../../fixtures/data/', import.meta.url).pathname;
const fx = (name: string) => join(FIXTURES, name);
const tmp = mkdtempSync(join(tmpdir(), 'toolrl-convert-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
async function convert(
  from: string,
  input: string,
  extra: Partial<ConvertOptions> = {},
): Promise<DatasetRow[]> {
  const out = join(tmp, `out-${n++}.parquet`);
  convertDataset({ from, input, out, ...extra });
  return readDataset(out);
}

/** Runs a conversion that must fail, and checks it wrote nothing. */
function failure(from: string, input: string, extra: Partial<ConvertOptions> = {}): string {
  const out = join(tmp, `fail-${n++}.parquet`);
  let message = '';
  try {
    convertDataset({ from, input, out, ...extra });
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    message = (err as Error).message;
  }
  expect(message, 'the conversion should have failed').not.toBe('');
  expect(existsSync(out)).toBe(false);
  expect(readdirSync(tmp).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  return message;
}

describe('jsonl (the multi-turn tool-call seed)', () => {
  it('turns conversations into prompts, answers into ground truth, other keys into extra_info', async () => {
    const rows = await convert('jsonl', fx('toolcall.jsonl'));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({
      data_source: 'toolcall',
      prompt: [
        { role: 'system', content: 'You can use calculator, weather_query, search and get_current_time.' },
        { role: 'user', content: 'What is 17 * 23?' },
      ],
      reward_model: { style: 'rule', ground_truth: '391' },
      extra_info: { index: 0 },
    });
    // A trailing assistant reply is not part of the prompt; it is the reference answer.
    expect(rows[1]!.prompt).toEqual([{ role: 'user', content: "What's the weather in Paris?" }]);
    expect(rows[1]!.reward_model.ground_truth).toBe('It is sunny in Paris, 21°C.');
    expect(rows[1]!.extra_info).toEqual({ index: 1, id: 'w-2' });
    // `messages` is accepted; per-row data_source and tools are kept (blank line 3 skipped).
    expect(rows[2]!.data_source).toBe('toolcall_time');
    expect(rows[2]!.extra_info.tools?.[0]?.function.name).toBe('get_current_time');
    expect(rows[2]!.reward_model.ground_truth).toBeUndefined();
  });

  it('names the line of an unknown role', () => {
    expect(failure('jsonl', fx('toolcall-bad-role.jsonl'))).toMatch(
      /toolcall-bad-role\.jsonl line 2: conversation\[1\]\.role: unknown role "human"/,
    );
  });

  it('names the truncated last line', () => {
    expect(failure('jsonl', fx('toolcall-truncated.jsonl'))).toMatch(
      /toolcall-truncated\.jsonl: line 2 is not valid JSON \(the file looks truncated\)/,
    );
  });

  it('rejects an empty file and a record of the wrong shape', () => {
    expect(failure('jsonl', fx('empty.jsonl'))).toMatch(/empty\.jsonl is empty/);
    expect(failure('jsonl', fx('toolcall-wrong-shape.jsonl'))).toMatch(
      /toolcall-wrong-shape\.jsonl line 3: expected a JSON object, got an array/,
    );
    expect(failure('jsonl', fx('aime.jsonl'))).toMatch(/aime\.jsonl line 1: needs a "conversation"/);
  });
});

describe('math (AIME-style)', () => {
  it('reads question or problem, stringifies the answer, keeps ids', async () => {
    const rows = await convert('math', fx('aime.jsonl'));
    expect(rows.map((r) => r.reward_model.ground_truth)).toEqual(['204', '2', '2']);
    expect(rows[0]).toMatchObject({
      data_source: 'math',
      ability: 'math',
      prompt: [{ role: 'user', content: expect.stringMatching(/^Every morning Aya/) }],
      extra_info: { index: 0, id: '2024-I-1', year: 2024 },
    });
    expect(rows[2]!.prompt[0]!.content).toBe('Compute 1+1.');
    expect(rows[2]!.extra_info.solution).toBe('1+1=2');
  });

  it('names the line without an answer', () => {
    expect(failure('math', fx('math-missing-answer.jsonl'))).toMatch(
      /math-missing-answer\.jsonl line 2: needs an "answer"/,
    );
  });
});

describe('qa (NQ / HotpotQA)', () => {
  it("gives Search-R1's {target: [...]} ground truth and keeps per-line data sources", async () => {
    const rows = await convert('qa', fx('nq.jsonl'));
    expect(rows.map((r) => r.reward_model.ground_truth)).toEqual([
      { target: ['2,718'] },
      { target: ['seven', '7'] },
      { target: ['Paris'] },
    ]);
    expect(rows.map((r) => r.data_source)).toEqual(['qa', 'nq', 'qa']);
    expect(rows[0]!.extra_info).toEqual({ index: 0, id: 'train_0' });
  });

  it('--data-source overrides every row', async () => {
    const rows = await convert('qa', fx('nq.jsonl'), { dataSource: 'hotpotqa' });
    expect(new Set(rows.map((r) => r.data_source))).toEqual(new Set(['hotpotqa']));
  });

  it('names the line with no golden answers', () => {
    expect(failure('qa', fx('qa-bad-answers.jsonl'))).toMatch(
      /qa-bad-answers\.jsonl line 2: needs "golden_answers"/,
    );
  });
});

describe('toolbench', () => {
  it('ToolLLaMA conversations: tools from the Python-literal API list, one row per distinct prompt', async () => {
    const out = join(tmp, 'toolllama.parquet');
    const summary = convertDataset({ from: 'toolbench', input: fx('toolllama.json'), out });
    expect(summary.notes).toEqual([
      'dropped 1 entries whose prompt repeats an earlier one (ToolLLaMA steps)',
    ]);
    const rows = await readDataset(out);
    expect(rows).toHaveLength(2);
    expect(rows[0]!.prompt[0]!.content).toBe(
      'You are AutoGPT, you can use many tools(functions) to do the following task.\n' +
        'First I will give you the task description, and your task start.\n' +
        'Remember: 1.the state change is irreversible.',
    );
    expect(rows[0]!.prompt[1]!.role).toBe('user');
    expect(rows[0]!.extra_info.tools?.map((t) => t.function.name)).toEqual([
      'songkick_concert_for_theclique',
      'Finish',
    ]);
    expect(rows[0]!.extra_info.tools?.[0]?.function.parameters).toMatchObject({
      properties: { id_conc: { type: 'string', example_value: '40698227-lumineers-at-aware-super-theatre' } },
    });
    expect(rows[0]!.reward_model.ground_truth).toEqual({ relevant_apis: ['songkick_concert_for_theclique'] });
    // Python escapes and ints inside the literal: 'it\'s live', 3.
    const weather = rows[1]!.extra_info.tools?.[0]?.function;
    expect(weather?.description).toBe("Current weather, it's live");
    expect(weather?.parameters).toMatchObject({
      properties: { days: { example_value: 3 } },
      optional: ['days'],
    });
  });

  it('StableToolBench queries: tools named as StableToolBench names them, Finish added, routes and category kept', async () => {
    const rows = await convert('toolbench', fx('stabletoolbench-queries.json'));
    const [messi, team] = rows;
    expect(messi!.extra_info.tools?.map((t) => t.function.name)).toEqual([
      'songkick_concert_for_theclique',
      'transfermarkt_search_for_theclique',
      'Finish',
    ]);
    const search = messi!.extra_info.tools?.[1]?.function;
    // "from" is a Python keyword: is_from; NUMBER -> integer; an empty default gives no example_value.
    expect(search?.parameters).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', description: '', example_value: 'messi' },
        is_from: { type: 'integer', description: 'page start' },
      },
      required: ['name'],
      optional: ['is_from'],
    });
    expect(search?.description).toBe(
      'This is the subfunction for tool "theclique", you can use this tool.The description of this function is: "Search by name"',
    );
    expect(messi!.extra_info).toMatchObject({
      category: 'Data',
      query_id: 588,
      apis: [
        {
          name: 'songkick_concert_for_theclique',
          category_name: 'Data',
          tool_name: 'theclique',
          api_name: 'songkick_concert',
        },
        {
          name: 'transfermarkt_search_for_theclique',
          category_name: 'Data',
          tool_name: 'theclique',
          api_name: 'transfermarkt_search',
        },
      ],
    });
    expect(messi!.reward_model.ground_truth).toEqual({
      relevant_apis: ['transfermarkt_search_for_theclique'],
    });
    // A tool name starting with a digit gets get_; no description, no parameters.
    expect(team!.extra_info.tools?.[0]?.function).toMatchObject({
      name: 'get_team_for_get_1_football_api',
      description: 'This is the subfunction for tool "get_1_football_api", you can use this tool.',
    });
    expect(team!.extra_info.category).toBe('Sports');
  });

  it('names the entry with no API list, an unknown role, and a truncated file', () => {
    expect(failure('toolbench', fx('toolbench-no-api-list.json'))).toMatch(
      /toolbench-no-api-list\.json entry 0: the system message has no API list/,
    );
    expect(failure('toolbench', fx('toolbench-bad-role.json'))).toMatch(
      /toolbench-bad-role\.json entry 0: conversations\[1\]\.from: unknown role "observer"/,
    );
    expect(failure('toolbench', fx('toolbench-truncated.txt'))).toMatch(
      /toolbench-truncated\.txt: not valid JSON at (line \d+|end of file) \(is the file truncated\?\)/,
    );
    expect(failure('toolbench', fx('nq.jsonl'))).toMatch(
      /nq\.jsonl line 1: expected a ToolLLaMA "conversations" entry/,
    );
  });
});

/** The fixtures use .jsonl (BFCL's .json files hold JSON Lines, which JSON linters reject); real names here. */
function bfclFolder(src: string): string {
  const dir = join(tmp, `${src}-${n++}`);
  cpSync(fx(src), dir, { recursive: true });
  for (const sub of [dir, join(dir, 'possible_answer')]) {
    for (const f of readdirSync(sub).filter((f) => f.endsWith('.jsonl'))) {
      renameSync(join(sub, f), join(sub, f.replace(/\.jsonl$/, '.json')));
    }
  }
  return dir;
}

describe('bfcl (v3 multi-turn)', () => {
  it('joins entries with the possible-answer file next to them and keeps what the environment needs', async () => {
    const dir = bfclFolder('bfcl');
    const rows = await convert('bfcl', join(dir, 'BFCL_v3_multi_turn_base.json'));
    expect(rows).toHaveLength(2);
    const [fs, math] = rows;
    expect(fs!.data_source).toBe('bfcl_multi_turn_base');
    expect(fs!.prompt).toEqual([
      {
        role: 'user',
        content: 'Move final_report.pdf within the document folder into a new temp folder there.',
      },
    ]);
    expect(fs!.reward_model.ground_truth).toEqual([
      [
        "cd(folder='document')",
        "mkdir(dir_name='temp')",
        "mv(source='final_report.pdf', destination='temp')",
      ],
      ["cd(folder='temp')", "grep(file_name='final_report.pdf',pattern='budget analysis')"],
    ]);
    expect(fs!.extra_info).toMatchObject({
      id: 'multi_turn_base_0',
      category: 'multi_turn_base',
      involved_classes: ['GorillaFileSystem'],
      path: [
        'GorillaFileSystem.cd',
        'GorillaFileSystem.mkdir',
        'GorillaFileSystem.mv',
        'GorillaFileSystem.grep',
      ],
    });
    expect(fs!.extra_info.question).toHaveLength(2);
    // The file tree has file names as keys: stored as JSON, read back exactly.
    expect(fs!.extra_info.initial_config).toEqual({
      GorillaFileSystem: {
        root: {
          workspace: {
            type: 'directory',
            contents: {
              document: {
                type: 'directory',
                contents: { 'final_report.pdf': { type: 'file', content: 'Year2024 budget analysis' } },
              },
            },
          },
        },
      },
    });
    // BFCL's `function` docs become tools with standard JSON Schema types (dict -> object, float -> number).
    expect(math!.extra_info.tools?.[0]?.function.parameters).toEqual({
      type: 'object',
      properties: { numbers: { type: 'array', items: { type: 'number' }, description: 'List of numbers' } },
      required: ['numbers'],
    });
  });

  it('converts a folder, keeping the empty turn and missed_function of miss_func', async () => {
    const rows = await convert('bfcl', bfclFolder('bfcl'));
    expect(rows.map((r) => r.extra_info.id)).toEqual([
      'multi_turn_base_0',
      'multi_turn_base_1',
      'multi_turn_miss_func_3',
    ]);
    expect(rows.map((r) => r.extra_info.index)).toEqual([0, 1, 2]);
    const miss = rows[2]!;
    expect(miss.data_source).toBe('bfcl_multi_turn_miss_func');
    expect(miss.extra_info.missed_function).toEqual({ '1': ['find'] });
    expect((miss.extra_info.question as unknown[])[1]).toEqual([]);
    expect(miss.reward_model.ground_truth).toEqual([
      [],
      ["find(path='.',name='test')"],
      ["cp(source='test_image1.jpg',destination='backup_tests')"],
    ]);
  });

  it('takes --answers explicitly (the fixtures .jsonl names)', async () => {
    const rows = await convert('bfcl', fx('bfcl/BFCL_v3_multi_turn_base.jsonl'), {
      answers: fx('bfcl/possible_answer/BFCL_v3_multi_turn_base.jsonl'),
    });
    expect(rows).toHaveLength(2);
  });

  it('fails on a turn-count mismatch or a missing answer, naming the entry, writing nothing', () => {
    const dir = bfclFolder('bfcl-bad');
    expect(failure('bfcl', join(dir, 'BFCL_v3_multi_turn_base.json'))).toMatch(
      /BFCL_v3_multi_turn_base\.json line 1 \(multi_turn_base_0\): the ground truth .* must be one list of call strings per turn \(2 turns/,
    );
    expect(failure('bfcl', join(dir, 'BFCL_v3_multi_turn_long_context.json'))).toMatch(
      /line 1 \(multi_turn_long_context_7\): no ground truth for multi_turn_long_context_7/,
    );
    const alone = join(tmp, `alone-${n++}`, 'BFCL_v3_multi_turn_base.json');
    cpSync(join(dir, 'BFCL_v3_multi_turn_base.json'), alone);
    expect(failure('bfcl', alone)).toMatch(
      /no ground truth found at .*possible_answer.*; pass the possible-answer file with --answers/,
    );
  });
});

describe('split, sample cap and prompt templates', () => {
  it('splits with a seed: same seed, same split; disjoint and complete; split recorded', async () => {
    const run = async (seed: number) => {
      const out = join(tmp, `tr-${seed}-${n++}.parquet`);
      const val = join(tmp, `va-${seed}-${n++}.parquet`);
      const s = convertDataset({
        from: 'qa',
        input: fx('nq.jsonl'),
        out,
        split: true,
        trainRatio: 0.6,
        valOut: val,
        seed,
      });
      // round(3 * 0.6) = 2 train rows, 1 validation row.
      expect([s.rows, s.val_rows]).toEqual([2, 1]);
      const [train, v] = [await readDataset(out), await readDataset(val)];
      expect(new Set(train.map((r) => r.extra_info.split))).toEqual(new Set(['train']));
      expect(v[0]!.extra_info.split).toBe('val');
      return [...train, ...v].map((r) => r.extra_info.index);
    };
    const a = await run(1);
    expect(await run(1)).toEqual(a);
    expect([...a].sort()).toEqual([0, 1, 2]);
  });

  it('refuses a ratio that leaves one side empty, and --split without --val-out', () => {
    expect(
      failure('qa', fx('nq.jsonl'), { split: true, trainRatio: 0.99, valOut: join(tmp, 'v.parquet') }),
    ).toMatch(/leaves no validation rows/);
    expect(failure('qa', fx('nq.jsonl'), { split: true })).toMatch(/--split needs --val-out/);
  });

  it('--max-samples keeps the first N rows', async () => {
    const rows = await convert('math', fx('aime.jsonl'), { maxSamples: 2 });
    expect(rows.map((r) => r.reward_model.ground_truth)).toEqual(['204', '2']);
  });

  it('--prompt-type wraps the question once and records the template', async () => {
    const rows = await convert('math', fx('aime.jsonl'), { promptType: 'qwen_retool' });
    expect(rows[1]!.prompt[0]!.role).toBe('system');
    expect(rows[1]!.prompt[1]!.content).toBe(
      'Find the remainder when 2^10 is divided by 7.\n\nGive the final answer in the form \\boxed{answer}.',
    );
    expect(rows[1]!.extra_info.prompt_type).toBe('retool');
  });

  it('rejects an unknown format or prompt type before reading anything', () => {
    expect(failure('csv', fx('nq.jsonl'))).toMatch(
      /unknown format csv; one of: jsonl, toolbench, math, qa, bfcl/,
    );
    expect(() =>
      convertDataset({ from: 'qa', input: fx('nq.jsonl'), out: join(tmp, 'x.parquet'), promptType: 'nope' }),
    ).toThrow(/unknown prompt_type nope; built-in: retool, search, toolcall/);
  });
});

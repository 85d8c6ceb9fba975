// `toolrl bfcl dataset`: BFCL multi-turn entries as training rows. BFCL's own loader (in the environment process)
// prepares each entry as it would for a model (the involved classes' function docs, held-out functions moved to
// `missed_function` by turn) and writes them with their ground truth in BFCL's file layout; the `bfcl` dataset
// converter then makes the Parquet rows (extra_info keeps BFCL's names; see shared/bfcl/converter.ts).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { type ConvertSummary, convertDataset } from '#shared/data/convert';
import { BFCL_PACKAGE_DIR, ensureBfclEnv } from './env.ts';
import './register-converter.ts'; // convertDataset's `bfcl` format

const run = promisify(execFile);

export const BFCL_CATEGORIES = [
  'multi_turn_base',
  'multi_turn_miss_func',
  'multi_turn_miss_param',
  'multi_turn_long_context',
] as const;

export interface BfclDatasetOptions {
  out: string;
  /** BFCL categories (default: all four multi-turn ones); `base` is short for `multi_turn_base`. */
  categories?: string[];
  /** Only these entry ids. */
  ids?: string[];
  /** The first N entries of each category. */
  limit?: number;
  python?: string;
  /** As `toolrl dataset convert`: seeded train/validation split, prompt template. */
  split?: boolean;
  trainRatio?: number;
  valOut?: string;
  seed?: number;
  promptType?: string;
}

export const categoryName = (c: string): string => (c.startsWith('multi_turn_') ? c : `multi_turn_${c}`);

export async function writeBfclDataset(opts: BfclDatasetOptions): Promise<ConvertSummary> {
  // With ids and no categories, the categories the ids name (`multi_turn_base_3` is in multi_turn_base).
  const named = opts.ids?.length ? [...new Set(opts.ids.map((id) => id.replace(/_\d+$/, '')))] : [];
  const categories = (
    opts.categories?.length ? opts.categories : named.length ? named : [...BFCL_CATEGORIES]
  ).map(categoryName);
  for (const c of categories)
    if (!(BFCL_CATEGORIES as readonly string[]).includes(c))
      throw new Error(`unknown BFCL category ${c}; choose from ${BFCL_CATEGORIES.join(', ')}`);
  const { python } = await ensureBfclEnv({ python: opts.python });
  const dir = mkdtempSync(join(tmpdir(), 'toolrl-bfcl-'));
  try {
    const args = ['-m', 'toolrl_bfcl', 'export', '--out', dir, '--categories', categories.join(',')];
    if (opts.ids?.length) args.push('--ids', opts.ids.join(','));
    if (opts.limit !== undefined) args.push('--limit', String(opts.limit));
    try {
      await run(python, args, {
        env: {
          ...process.env,
          PYTHONPATH: [BFCL_PACKAGE_DIR, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
        },
        maxBuffer: 16 << 20,
      });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`BFCL's loader failed: ${e.stderr?.trim() || e.message}`);
    }
    return convertDataset({
      from: 'bfcl',
      input: dir,
      out: opts.out,
      ...(opts.split
        ? { split: true, trainRatio: opts.trainRatio, valOut: opts.valOut, seed: opts.seed }
        : {}),
      ...(opts.promptType ? { promptType: opts.promptType } : {}),
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

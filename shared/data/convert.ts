// `toolrl dataset convert`: input in a known format -> checked DatasetRows -> (optional prompt template,
// sample cap, seeded train/val split) -> Parquet. Everything is checked and encoded before anything is
// written, and the output files are written as one (temp files, then renames), so bad input or a filesystem
// error leaves no partial output.
import { resolve } from 'node:path';
import { type DatasetRow, DatasetRowSchema } from '#shared/schemas/dataset-row';
import { CONVERTERS } from './converters/index.ts';
import { DATASET_LAYOUT, formatIssues } from './dataset.ts';
import { encodeParquet } from './parquet.ts';
import { applyTemplate, loadPromptTemplate } from './prompts/templates.ts';
import { InputError } from './records.ts';
import { splitTrainVal } from './split.ts';
import { FileWriteError, writeFilesAtomic } from './write-files.ts';

export interface ConvertOptions {
  from: string;
  input: string;
  out: string;
  /** Split into train (`out`) and validation (`valOut`) files. */
  split?: boolean;
  trainRatio?: number;
  valOut?: string;
  /** Keep the first N converted rows (in input order). */
  maxSamples?: number;
  /** Seed of the split's shuffle. */
  seed?: number;
  dataSource?: string;
  /** Template applied to every row (a built-in name or a .yaml path). */
  promptType?: string;
  /** BFCL possible-answer file. */
  answers?: string;
  /** ToolBench: category of rows whose data names none (ToolLLaMA conversations). */
  category?: string;
  /** ToolBench queries: the call format the prompt asks for (`react`: ToolLLaMA's, tools in the prompt text). */
  callFormat?: 'hermes' | 'react';
  /** BFCL: interpreter with bfcl-eval for entries without function docs (default: `toolrl bfcl setup`'s). */
  bfclPython?: string;
}

export interface ConvertSummary {
  format: string;
  rows: number;
  out: string;
  data_sources: Record<string, number>;
  val_rows?: number;
  val_out?: string;
  notes: string[];
}

const countSources = (rows: readonly DatasetRow[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const r of rows) out[r.data_source] = (out[r.data_source] ?? 0) + 1;
  return out;
};

/** Writes the output files as one; a filesystem error is an InputError naming the file (nothing is written). */
function write(files: { path: string; bytes: Uint8Array }[]): void {
  try {
    writeFilesAtomic(files);
  } catch (err) {
    if (err instanceof FileWriteError) throw new InputError(err.message);
    throw err;
  }
}

/** Converts and writes; throws InputError (naming the file and line/entry) before writing anything. */
export function convertDataset(opts: ConvertOptions): ConvertSummary {
  const converter = CONVERTERS[opts.from];
  if (!converter)
    throw new InputError(`unknown format ${opts.from}; one of: ${Object.keys(CONVERTERS).join(', ')}`);
  if (opts.split && !opts.valOut)
    throw new InputError('--split needs --val-out FILE for the validation rows');
  if (opts.valOut && !opts.split) throw new InputError('--val-out is only used with --split');
  if (opts.valOut && resolve(opts.valOut) === resolve(opts.out))
    throw new InputError(`--out and --val-out name the same file (${opts.out})`);
  const template = opts.promptType ? loadPromptTemplate(opts.promptType) : undefined;

  const { rows: converted, notes } = converter.convert({
    input: opts.input,
    dataSource: opts.dataSource,
    answers: opts.answers,
    bfclPython: opts.bfclPython,
    category: opts.category,
    callFormat: opts.callFormat,
  });
  const kept = opts.maxSamples !== undefined ? converted.slice(0, opts.maxSamples) : converted;
  if (kept.length === 0) throw new InputError(`${opts.input}: no rows to write`);
  if (kept.length < converted.length)
    notes.push(`kept the first ${kept.length} of ${converted.length} rows (--max-samples)`);

  const rows = kept.map(({ at, row }, index) => {
    const parsed = DatasetRowSchema.safeParse({ ...row, extra_info: { ...row.extra_info, index } });
    if (!parsed.success)
      throw new InputError(`${opts.input} ${at}: ${formatIssues(parsed.error).join('; ')}`);
    return template ? applyTemplate(parsed.data, template) : parsed.data;
  });

  if (!opts.split) {
    write([{ path: opts.out, bytes: encodeParquet(rows, DATASET_LAYOUT) }]);
    return { format: opts.from, rows: rows.length, out: opts.out, data_sources: countSources(rows), notes };
  }
  let parts: { train: DatasetRow[]; val: DatasetRow[] };
  try {
    parts = splitTrainVal(rows, opts.trainRatio ?? 0.9, opts.seed ?? 0);
  } catch (err) {
    throw new InputError((err as Error).message);
  }
  const tag = (rs: DatasetRow[], split: string) =>
    rs.map((r) => ({ ...r, extra_info: { ...r.extra_info, split } }));
  const train = tag(parts.train, 'train');
  const val = tag(parts.val, 'val');
  // Both files or neither: a failure on the second leaves the first unwritten too.
  write([
    { path: opts.out, bytes: encodeParquet(train, DATASET_LAYOUT) },
    { path: opts.valOut!, bytes: encodeParquet(val, DATASET_LAYOUT) },
  ]);
  return {
    format: opts.from,
    rows: train.length,
    out: opts.out,
    val_rows: val.length,
    val_out: opts.valOut,
    data_sources: countSources(rows),
    notes,
  };
}

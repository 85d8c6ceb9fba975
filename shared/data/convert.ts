// `toolrl dataset convert`: input in a known format -> checked DatasetRows -> (optional prompt template,
// sample cap, seeded train/val split) -> Parquet. Everything is checked and encoded before anything is
// written, and each file is written atomically, so bad input leaves no partial output.
import { type DatasetRow, DatasetRowSchema } from '#shared/schemas/dataset-row';
import { CONVERTERS } from './converters/index.ts';
import { DATASET_LAYOUT, formatIssues } from './dataset.ts';
import { encodeParquet, writeFileAtomic } from './parquet.ts';
import { applyTemplate, loadPromptTemplate } from './prompts/templates.ts';
import { InputError } from './records.ts';
import { splitTrainVal } from './split.ts';

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

/** Converts and writes; throws InputError (naming the file and line/entry) before writing anything. */
export function convertDataset(opts: ConvertOptions): ConvertSummary {
  const converter = CONVERTERS[opts.from];
  if (!converter)
    throw new InputError(`unknown format ${opts.from}; one of: ${Object.keys(CONVERTERS).join(', ')}`);
  if (opts.split && !opts.valOut)
    throw new InputError('--split needs --val-out FILE for the validation rows');
  if (opts.valOut && !opts.split) throw new InputError('--val-out is only used with --split');
  const template = opts.promptType ? loadPromptTemplate(opts.promptType) : undefined;

  const { rows: converted, notes } = converter.convert({
    input: opts.input,
    dataSource: opts.dataSource,
    answers: opts.answers,
    bfclPython: opts.bfclPython,
    category: opts.category,
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
    const bytes = encodeParquet(rows, DATASET_LAYOUT);
    writeFileAtomic(opts.out, bytes);
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
  const trainBytes = encodeParquet(train, DATASET_LAYOUT);
  const valBytes = encodeParquet(val, DATASET_LAYOUT);
  writeFileAtomic(opts.out, trainBytes);
  writeFileAtomic(opts.valOut!, valBytes);
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

// Reading and writing datasets of DatasetRow (verl's Parquet layout). Every row is parsed with
// DatasetRowSchema on the way in and on the way out, so a bad row is reported with its row number and a
// file we write is always one we can read.

import type { z } from 'zod';
import { type DatasetRow, type DatasetRowInput, DatasetRowSchema } from '#shared/schemas/dataset-row';
import { bfclDocToToolSchema } from '#shared/tools/bfcl-schema';
import { adaptForeignRow } from './foreign-rows.ts';
import {
  encodeParquet,
  iterateParquetRows,
  openParquet,
  type ParquetSource,
  type Row,
  type WriteParquetOptions,
  writeFileAtomic,
} from './parquet.ts';

/** One problem with a dataset; `row` is the 0-based Parquet row number (pandas' `df.iloc[row]`), null for the file. */
export interface DatasetProblem {
  row: number | null;
  message: string;
}

export class DatasetError extends Error {
  override name = 'DatasetError';
  constructor(
    readonly problems: DatasetProblem[],
    context = '',
  ) {
    const shown = problems.slice(0, 10).map(formatProblem);
    const more = problems.length > shown.length ? `\n… and ${problems.length - shown.length} more` : '';
    super(`${context}${shown.join('\n')}${more}`);
  }
}

export const formatProblem = (p: DatasetProblem): string =>
  p.row === null ? p.message : `row ${p.row}: ${p.message}`;

/** `prompt[1].role` from zod's `['prompt', 1, 'role']`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, seg) => {
    if (typeof seg === 'number') return `${acc}[${seg}]`;
    return acc ? `${acc}.${String(seg)}` : String(seg);
  }, '');
}

export const formatIssues = (error: z.ZodError): string[] =>
  error.issues.map((i) => (i.path.length ? `${formatPath(i.path)}: ${i.message}` : i.message));

/** How DatasetRow is laid out in Parquet: verl's column order, and the free-form paths kept as JSON strings. */
export const DATASET_LAYOUT: WriteParquetOptions = {
  columnOrder: ['data_source', 'prompt', 'ability', 'reward_model', 'extra_info'],
  fieldOrder: new Map([
    ['prompt.[]', ['role', 'content']],
    ['reward_model', ['style', 'ground_truth']],
    ['extra_info', ['index', 'split']],
  ]),
  jsonPaths: [
    ['prompt', '[]', 'tool_calls'],
    ['extra_info', 'tools'],
    // BFCL: per-class state with file names and ids as keys, and {turn: [function names]}.
    ['extra_info', 'initial_config'],
    ['extra_info', 'missed_function'],
  ],
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** verl files without `extra_info.index` get their row number as the row's id. */
function withIndex(raw: Row, rowNumber: number): Row {
  if (raw.extra_info === undefined) return { ...raw, extra_info: { index: rowNumber } };
  if (isObject(raw.extra_info) && raw.extra_info.index === undefined) {
    return { ...raw, extra_info: { ...raw.extra_info, index: rowNumber } };
  }
  return raw;
}

const bfclDocs = (docs: unknown[]): unknown[] => docs.map(bfclDocToToolSchema);

/**
 * Parses one raw row (other systems' row shapes adapted first, see foreign-rows.ts); returns the row or its
 * problems (each naming the field).
 */
export function parseRow(raw: Row, rowNumber: number): { row: DatasetRow } | { problems: DatasetProblem[] } {
  const parsed = DatasetRowSchema.safeParse(withIndex(adaptForeignRow(raw, bfclDocs), rowNumber));
  if (parsed.success) return { row: parsed.data };
  return { problems: formatIssues(parsed.error).map((message) => ({ row: rowNumber, message })) };
}

/** Opens a Parquet source, turning an unreadable file into a DatasetError that names it. */
export async function openDataset(source: ParquetSource): Promise<Awaited<ReturnType<typeof openParquet>>> {
  try {
    return await openParquet(source);
  } catch (err) {
    const what = typeof source === 'string' ? source : 'the dataset';
    throw new DatasetError([
      { row: null, message: `cannot read ${what} as Parquet: ${(err as Error).message}` },
    ]);
  }
}

/** Streams parsed rows with their row numbers (a row group at a time); throws DatasetError at the first bad row. */
export async function* iterateDataset(
  source: ParquetSource,
): AsyncGenerator<{ rowNumber: number; row: DatasetRow }> {
  const pf = await openDataset(source);
  for await (const { rowNumber, row: raw } of iterateParquetRows(pf)) {
    const r = parseRow(raw, rowNumber);
    if ('problems' in r) throw new DatasetError(r.problems);
    yield { rowNumber, row: r.row };
  }
}

/** Every row of a dataset (a path, or the bytes of a Parquet object); throws DatasetError listing bad rows. */
export async function readDataset(source: ParquetSource): Promise<DatasetRow[]> {
  const pf = await openDataset(source);
  const rows: DatasetRow[] = [];
  const problems: DatasetProblem[] = [];
  for await (const { rowNumber, row: raw } of iterateParquetRows(pf)) {
    const r = parseRow(raw, rowNumber);
    if ('problems' in r) problems.push(...r.problems);
    else rows.push(r.row);
  }
  if (problems.length) throw new DatasetError(problems);
  return rows;
}

/** Parses rows for writing (0-based row numbers in errors); nothing is written if any row is bad. */
export function prepareRows(rows: readonly DatasetRowInput[]): DatasetRow[] {
  if (rows.length === 0) throw new DatasetError([{ row: null, message: 'a dataset needs at least one row' }]);
  const out: DatasetRow[] = [];
  const problems: DatasetProblem[] = [];
  rows.forEach((raw, i) => {
    const parsed = DatasetRowSchema.safeParse(raw);
    if (parsed.success) out.push(parsed.data);
    else problems.push(...formatIssues(parsed.error).map((message) => ({ row: i, message })));
  });
  if (problems.length) throw new DatasetError(problems);
  return out;
}

/** The Parquet bytes of a dataset (for a blob store). */
export function encodeDataset(rows: readonly DatasetRowInput[]): Uint8Array {
  return encodeParquet(prepareRows(rows), DATASET_LAYOUT);
}

/** Writes a dataset atomically: the file at `path` is the old one or the complete new one, never partial. */
export function writeDataset(path: string, rows: readonly DatasetRowInput[]): void {
  writeFileAtomic(path, encodeDataset(rows));
}

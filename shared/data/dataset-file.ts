// A dataset file as users bring it: Parquet (verl's rows), or JSON Lines / a JSON array converted on the fly.
// A JSON record is read as a verl row when it has a `prompt`, as the multi-turn seed's chat line when it has a
// `conversation` (or `messages`), and as ToolBench data when it has `api_list` or ToolLLaMA `conversations`;
// anything else is refused at once, naming the record and the `dataset convert` command that reads it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { jsonlConverter } from './converters/jsonl.ts';
import { toolbenchConverter } from './converters/toolbench.ts';
import type { ConvertedRow } from './converters/types.ts';
import { DatasetError, type DatasetProblem, parseRow, readDataset } from './dataset.ts';
import { InputError, isObject, readRecords } from './records.ts';

export const DATASET_EXTENSIONS = ['.parquet', '.jsonl', '.json'] as const;

/** `parquet`, `json` (JSON Lines or one array), or null for a file that is not a dataset by its name. */
export function datasetFormat(path: string): 'parquet' | 'json' | null {
  const lower = path.toLowerCase();
  if (lower.endsWith('.parquet')) return 'parquet';
  if (lower.endsWith('.jsonl') || lower.endsWith('.json')) return 'json';
  return null;
}

/** The name a JSON dataset gets once converted (`sample_data.jsonl` -> `sample_data.parquet`). */
export const parquetName = (path: string): string => path.replace(/\.(jsonl|json)$/i, '.parquet');

const CONVERT_HINT =
  'convert it first: `npx toolrl dataset convert FILE --from jsonl|toolbench|math|qa|bfcl --out FILE.parquet` (`npx toolrl dataset convert --help` says what each reads)';

/** Rows of a JSON Lines or JSON-array file; a problem is a DatasetError naming the file and the record. */
export function readJsonDataset(path: string): DatasetRow[] {
  const fail = (message: string): never => {
    throw new DatasetError([{ row: null, message }]);
  };
  let first: unknown;
  try {
    first = readRecords(path)[0]?.value;
  } catch (err) {
    if (err instanceof InputError) fail(err.message);
    throw err;
  }
  if (!isObject(first)) return fail(`${path}: the first record is not a JSON object; ${CONVERT_HINT}`);
  if ('prompt' in first) return verlRows(path);
  let converted: ConvertedRow[];
  try {
    if ('conversation' in first || 'messages' in first)
      converted = jsonlConverter.convert({ input: path }).rows;
    else if ('api_list' in first || 'conversations' in first)
      converted = toolbenchConverter.convert({ input: path }).rows;
    else
      return fail(
        `${path}: records with ${Object.keys(first).slice(0, 8).join(', ')} are neither verl rows (prompt, data_source, …), chat lines (conversation or messages) nor ToolBench data (api_list, conversations); ${CONVERT_HINT}`,
      );
  } catch (err) {
    if (err instanceof InputError) fail(err.message);
    throw err;
  }
  const problems: DatasetProblem[] = [];
  const rows: DatasetRow[] = [];
  converted.forEach(({ at, row }, i) => {
    const r = parseRow({ ...row, extra_info: { ...row.extra_info, index: i } }, i);
    if ('problems' in r) problems.push(...r.problems.map((p) => ({ ...p, message: `${at}: ${p.message}` })));
    else rows.push(r.row);
  });
  if (problems.length) throw new DatasetError(problems, `${path}: `);
  return rows;
}

/** verl rows written as JSON (what `datasets.to_json` writes): parsed as the Parquet reader parses them. */
function verlRows(path: string): DatasetRow[] {
  const problems: DatasetProblem[] = [];
  const rows: DatasetRow[] = [];
  readRecords(path).forEach((rec, i) => {
    const r = isObject(rec.value)
      ? parseRow(rec.value, i)
      : { problems: [{ row: i, message: `${rec.at} is not a JSON object` }] };
    if ('problems' in r) problems.push(...r.problems);
    else rows.push(r.row);
  });
  if (problems.length) throw new DatasetError(problems, `${path}: `);
  return rows;
}

/** Every row of a dataset file on this machine (.parquet, .jsonl or .json). */
export async function readDatasetFile(path: string): Promise<DatasetRow[]> {
  const format = datasetFormat(path);
  if (format === 'parquet') return readDataset(path);
  if (format === 'json') return readJsonDataset(path);
  throw new DatasetError([
    { row: null, message: `${path} is not a dataset: use .parquet, .jsonl or .json (${CONVERT_HINT})` },
  ]);
}

/** Every row of a dataset object of a blob store, by its key's extension (a JSON one goes through a temp file). */
export async function readDatasetObject(key: string, bytes: Uint8Array): Promise<DatasetRow[]> {
  const format = datasetFormat(key);
  if (format === 'parquet') return readDataset(bytes);
  if (format !== 'json')
    throw new DatasetError([{ row: null, message: `${key} is not a dataset (.parquet, .jsonl or .json)` }]);
  const dir = mkdtempSync(join(tmpdir(), 'toolrl-dataset-'));
  try {
    const file = join(dir, basename(key));
    writeFileSync(file, bytes);
    return readJsonDataset(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

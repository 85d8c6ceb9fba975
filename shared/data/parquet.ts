// Reading and writing Parquet rows (hyparquet / hyparquet-writer, pure JS, so it runs in Lambda and the
// embedded runtime alike). Rows come back as plain JSON values: int64 as numbers, nulls of unified
// pyarrow structs dropped, JSON-string subtrees parsed again. Writes are atomic (temp file + rename).
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { AsyncBuffer, FileMetaData } from 'hyparquet';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { parquetWriteBuffer } from 'hyparquet-writer';
import {
  encodeValue,
  finalizeType,
  LIST_ELEMENT,
  PathSet,
  schemaElements,
  typeOfValue,
  unifyTypes,
  type ValuePath,
  type ValueType,
} from './parquet-schema.ts';

/** Key-value metadata entry listing the paths stored as JSON strings (a JSON array of path arrays). */
export const JSON_PATHS_KEY = 'toolrl.json_paths';
/** Rows per row group we write: a streaming reader holds one group in memory at a time. */
export const ROW_GROUP_ROWS = 10_000;
/** pandas writes its index as a column; it is not data. */
const PANDAS_INDEX = /^__index_level_\d+__$/;

export type ParquetSource = string | Uint8Array | ArrayBuffer;
export type Row = Record<string, unknown>;

export interface WriteParquetOptions {
  /** Paths stored as JSON strings whatever they hold (free-form values such as JSON-Schema objects). */
  jsonPaths?: readonly ValuePath[];
  /** Columns written first, in this order; the rest follow in first-seen order. */
  columnOrder?: readonly string[];
  /** Struct keys written first under a path (e.g. `reward_model` -> style, ground_truth). */
  fieldOrder?: ReadonlyMap<string, readonly string[]>;
}

function orderedColumns(rows: readonly Row[], first: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const row of rows) for (const k of Object.keys(row)) seen.add(k);
  return [...first.filter((c) => seen.has(c)), ...[...seen].filter((c) => !first.includes(c))];
}

function reorderFields(
  t: ValueType,
  path: ValuePath,
  order: ReadonlyMap<string, readonly string[]>,
): ValueType {
  if (t.kind === 'list')
    return { kind: 'list', element: reorderFields(t.element, [...path, LIST_ELEMENT], order) };
  if (t.kind !== 'struct') return t;
  const first = order.get(path.join('.')) ?? [];
  const keys = [
    ...first.filter((k) => t.fields.has(k)),
    ...[...t.fields.keys()].filter((k) => !first.includes(k)),
  ];
  return {
    kind: 'struct',
    fields: new Map(keys.map((k) => [k, reorderFields(t.fields.get(k)!, [...path, k], order)])),
  };
}

/** Encodes rows as one Parquet file (snappy) with a schema inferred from all of them. */
export function encodeParquet(rows: readonly Row[], options: WriteParquetOptions = {}): Uint8Array {
  if (rows.length === 0) throw new Error('cannot write a Parquet file with no rows');
  const forced = new PathSet(options.jsonPaths ?? []);
  const jsonPaths: ValuePath[] = [];
  const columns = orderedColumns(rows, options.columnOrder ?? []).map((name) => {
    let t: ValueType = { kind: 'null' };
    for (const row of rows) t = unifyTypes(t, typeOfValue(row[name], [name], forced));
    t = reorderFields(finalizeType(t, [name], jsonPaths), [name], options.fieldOrder ?? new Map());
    return { name, type: t };
  });
  const schema = [
    { name: 'root', num_children: columns.length },
    ...columns.flatMap((c) => schemaElements(c.name, c.type)),
  ];
  const columnData = columns.map((c) => ({
    name: c.name,
    data: rows.map((r) => encodeValue(r[c.name], c.type)),
  }));
  const kvMetadata = jsonPaths.length
    ? [{ key: JSON_PATHS_KEY, value: JSON.stringify(jsonPaths) }]
    : undefined;
  const buffer = parquetWriteBuffer({
    columnData,
    schema,
    kvMetadata,
    createdBy: 'toolrl',
    rowGroupSize: ROW_GROUP_ROWS,
  });
  return new Uint8Array(buffer);
}

/** Writes `bytes` to `path` through a temp file in the same folder, so readers never see a partial file. */
export function writeFileAtomic(path: string, bytes: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

export function writeParquetFile(
  path: string,
  rows: readonly Row[],
  options: WriteParquetOptions = {},
): void {
  writeFileAtomic(path, encodeParquet(rows, options));
}

/** An opened Parquet file: its footer read, rows not yet. */
export interface ParquetFile {
  readonly file: AsyncBuffer;
  readonly metadata: FileMetaData;
  readonly numRows: number;
  /** Top-level column names (pandas' index column left out). */
  readonly columns: string[];
  /** Paths the writer stored as JSON strings (from our key-value metadata). */
  readonly jsonPaths: ValuePath[];
}

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

export async function openParquet(source: ParquetSource): Promise<ParquetFile> {
  const file: AsyncBuffer =
    typeof source === 'string'
      ? await asyncBufferFromFile(source)
      : source instanceof Uint8Array
        ? toArrayBuffer(source)
        : source;
  const metadata = await parquetMetadataAsync(file);
  const columns = parquetSchema(metadata)
    .children.map((c) => c.element.name)
    .filter((n) => !PANDAS_INDEX.test(n));
  const kv = metadata.key_value_metadata?.find((e) => e.key === JSON_PATHS_KEY)?.value;
  const jsonPaths = kv ? (JSON.parse(kv) as ValuePath[]) : [];
  return { file, metadata, numRows: Number(metadata.num_rows), columns, jsonPaths };
}

/** Plain JSON values: bigint -> number, Date -> ISO string, bytes -> base64, null struct fields dropped. */
export function normalizeValue(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'bigint') {
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  }
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map((v) => normalizeValue(v) ?? null);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const n = normalizeValue(v);
      if (n !== undefined) out[k] = n;
    }
    return out;
  }
  return value;
}

/** Parses the JSON-string subtrees at `path` inside `value` in place of the strings. */
function decodeJsonAt(value: unknown, path: ValuePath, depth: number): unknown {
  if (value === undefined || value === null) return value;
  if (depth === path.length) return typeof value === 'string' ? JSON.parse(value) : value;
  const seg = path[depth]!;
  if (seg === LIST_ELEMENT) {
    return Array.isArray(value) ? value.map((v) => decodeJsonAt(v, path, depth + 1)) : value;
  }
  if (typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    if (seg in obj) {
      const decoded = decodeJsonAt(obj[seg], path, depth + 1);
      if (decoded === null) delete obj[seg];
      else obj[seg] = decoded;
    }
  }
  return value;
}

function normalizeRow(raw: Row, pf: ParquetFile): Row {
  const row: Row = {};
  for (const name of pf.columns) {
    const v = normalizeValue(raw[name]);
    if (v !== undefined) row[name] = v;
  }
  for (const path of pf.jsonPaths) {
    const [col, ...rest] = path;
    if (col === undefined || !(col in row)) continue;
    const decoded = decodeJsonAt(row[col], rest, 0);
    if (decoded === null) delete row[col];
    else row[col] = decoded;
  }
  return row;
}

/** Reads rows [rowStart, rowEnd) as plain JSON objects. */
export async function readParquetRows(pf: ParquetFile, rowStart = 0, rowEnd = pf.numRows): Promise<Row[]> {
  if (rowEnd <= rowStart) return [];
  const raw = (await parquetReadObjects({
    file: pf.file,
    metadata: pf.metadata,
    rowStart,
    rowEnd,
    compressors,
    columns: pf.columns,
  })) as Row[];
  return raw.map((r) => normalizeRow(r, pf));
}

/**
 * Streams rows with their 0-based row numbers, one row group at a time (hyparquet decodes a whole row group
 * for any slice of it, so slicing finer would decode it again for every slice).
 */
export async function* iterateParquetRows(pf: ParquetFile): AsyncGenerator<{ rowNumber: number; row: Row }> {
  let start = 0;
  for (const group of pf.metadata.row_groups) {
    const end = start + Number(group.num_rows);
    const rows = await readParquetRows(pf, start, end);
    for (let i = 0; i < rows.length; i++) yield { rowNumber: start + i, row: rows[i]! };
    start = end;
  }
}

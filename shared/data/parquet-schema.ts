// Infers a nested Parquet schema from JS rows the way pyarrow's `Table.from_pylist` does (structs for
// objects, lists, int64/double/bool/string leaves), so what we write reads in pandas/pyarrow/verl as
// the same columns their own preprocessors produce. Where pyarrow would refuse (a value that is a
// string in one row and an object in another, an object with no or very many keys, or a path the caller
// marks free-form, such as JSON-Schema tool parameters), the subtree is stored as a JSON string and its
// path recorded in the file's key-value metadata so our reader parses it back.
import type { SchemaElement } from 'hyparquet';

export type ValueType =
  | { kind: 'null' }
  | { kind: 'bool' }
  | { kind: 'int' }
  | { kind: 'float' }
  | { kind: 'string' }
  | { kind: 'json' }
  | { kind: 'list'; element: ValueType }
  | { kind: 'struct'; fields: Map<string, ValueType> };

/** A path into a row: column name, then struct keys, with `[]` for "each element of a list". */
export type ValuePath = readonly string[];
export const LIST_ELEMENT = '[]';

/** Objects with more distinct keys than this are maps in disguise (file trees, per-id tables): JSON. */
export const MAX_STRUCT_FIELDS = 64;

const NULL: ValueType = { kind: 'null' };
const JSON_TYPE: ValueType = { kind: 'json' };
const pathKey = (path: ValuePath): string => path.join('\u0000');

export class PathSet {
  private readonly keys: Set<string>;
  constructor(paths: Iterable<ValuePath> = []) {
    this.keys = new Set([...paths].map(pathKey));
  }
  has(path: ValuePath): boolean {
    return this.keys.has(pathKey(path));
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** The type of one value at `path`; `forced` paths are JSON whatever they hold. */
export function typeOfValue(value: unknown, path: ValuePath, forced: PathSet): ValueType {
  if (value === null || value === undefined) return NULL;
  if (forced.has(path)) return JSON_TYPE;
  switch (typeof value) {
    case 'boolean':
      return { kind: 'bool' };
    case 'bigint':
      return { kind: 'int' };
    case 'number':
      return Number.isSafeInteger(value) ? { kind: 'int' } : { kind: 'float' };
    case 'string':
      return { kind: 'string' };
  }
  if (Array.isArray(value)) {
    const elementPath = [...path, LIST_ELEMENT];
    let element = NULL;
    for (const item of value) element = unifyTypes(element, typeOfValue(item, elementPath, forced));
    return { kind: 'list', element };
  }
  if (isPlainObject(value)) {
    const fields = new Map<string, ValueType>();
    for (const [k, v] of Object.entries(value)) fields.set(k, typeOfValue(v, [...path, k], forced));
    return { kind: 'struct', fields };
  }
  if (value instanceof Date) return { kind: 'string' };
  return JSON_TYPE;
}

/** The narrowest type both values fit (pyarrow's rules: null is absorbed, int widens to double). */
export function unifyTypes(a: ValueType, b: ValueType): ValueType {
  if (a.kind === 'null') return b;
  if (b.kind === 'null') return a;
  if (a.kind === 'json' || b.kind === 'json') return JSON_TYPE;
  if (a.kind === 'list' && b.kind === 'list')
    return { kind: 'list', element: unifyTypes(a.element, b.element) };
  if (a.kind === 'struct' && b.kind === 'struct') {
    const fields = new Map(a.fields);
    for (const [k, t] of b.fields) fields.set(k, unifyTypes(fields.get(k) ?? NULL, t));
    return fields.size > MAX_STRUCT_FIELDS ? JSON_TYPE : { kind: 'struct', fields };
  }
  if (a.kind === b.kind) return a;
  if ((a.kind === 'int' && b.kind === 'float') || (a.kind === 'float' && b.kind === 'int'))
    return { kind: 'float' };
  return JSON_TYPE;
}

/**
 * Settles what Parquet cannot hold: an all-null leaf becomes a string column, an object with no keys (or
 * too many) becomes JSON. Returns the final type and every path stored as JSON.
 */
export function finalizeType(t: ValueType, path: ValuePath, jsonPaths: ValuePath[]): ValueType {
  switch (t.kind) {
    case 'null':
      return { kind: 'string' };
    case 'json':
      jsonPaths.push(path);
      return t;
    case 'list':
      return { kind: 'list', element: finalizeType(t.element, [...path, LIST_ELEMENT], jsonPaths) };
    case 'struct': {
      if (t.fields.size === 0 || t.fields.size > MAX_STRUCT_FIELDS) {
        jsonPaths.push(path);
        return JSON_TYPE;
      }
      const fields = new Map<string, ValueType>();
      for (const [k, f] of t.fields) fields.set(k, finalizeType(f, [...path, k], jsonPaths));
      return { kind: 'struct', fields };
    }
    default:
      return t;
  }
}

const STRING_LEAF = { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } } as const;

/** The flattened (depth-first) Parquet schema elements of one column, in the 3-level LIST layout pyarrow writes. */
export function schemaElements(name: string, t: ValueType): SchemaElement[] {
  const repetition_type = 'OPTIONAL' as const;
  switch (t.kind) {
    case 'bool':
      return [{ name, type: 'BOOLEAN', repetition_type }];
    case 'int':
      return [{ name, type: 'INT64', repetition_type }];
    case 'float':
      return [{ name, type: 'DOUBLE', repetition_type }];
    case 'null':
    case 'string':
    case 'json':
      return [{ name, ...STRING_LEAF, repetition_type }];
    case 'list':
      return [
        { name, repetition_type, converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        ...schemaElements('element', t.element),
      ];
    case 'struct':
      return [
        { name, repetition_type, num_children: t.fields.size },
        ...[...t.fields].flatMap(([k, f]) => schemaElements(k, f)),
      ];
  }
}

/** Shapes a JS value for the writer: int64 as bigint, JSON subtrees as strings, absent struct keys as null. */
export function encodeValue(value: unknown, t: ValueType): unknown {
  if (value === null || value === undefined) return null;
  switch (t.kind) {
    case 'json':
      return JSON.stringify(value);
    case 'int':
      return typeof value === 'bigint' ? value : BigInt(value as number);
    case 'float':
      return Number(value);
    case 'bool':
      return value;
    case 'null':
    case 'string':
      return value instanceof Date ? value.toISOString() : value;
    case 'list':
      return (value as unknown[]).map((v) => encodeValue(v, t.element));
    case 'struct': {
      const obj = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [k, f] of t.fields) out[k] = encodeValue(obj[k], f);
      return out;
    }
  }
}

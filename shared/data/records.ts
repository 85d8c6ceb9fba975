// Reads converter inputs: JSON Lines (one record per line) or one JSON array, each record tagged with
// where it came from ("line 12", 1-based like an editor; "entry 3", 0-based like jq's `.[3]`), so every
// conversion error can point at the record.
import { readFileSync } from 'node:fs';

/** Bad converter input; the message names the file and the line or entry. */
export class InputError extends Error {
  override name = 'InputError';
}

export interface SourceRecord {
  value: unknown;
  /** `line 12` or `entry 3`. */
  at: string;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** 1-based line of a character offset (V8 reports JSON errors by offset). */
function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function jsonArrayRecords(path: string, text: string): SourceRecord[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const msg = (err as Error).message;
    const pos = /position (\d+)/.exec(msg);
    const where = pos ? `line ${lineOf(text, Number(pos[1]))}` : 'end of file';
    throw new InputError(`${path}: not valid JSON at ${where} (is the file truncated?): ${msg}`);
  }
  return (parsed as unknown[]).map((value, i) => ({ value, at: `entry ${i}` }));
}

function jsonLinesRecords(path: string, text: string): SourceRecord[] {
  const records: SourceRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    try {
      records.push({ value: JSON.parse(line), at: `line ${i + 1}` });
    } catch (err) {
      const last = lines.slice(i + 1).every((l) => l.trim() === '');
      throw new InputError(
        `${path}: line ${i + 1} is not valid JSON${last ? ' (the file looks truncated)' : ''}: ${(err as Error).message}`,
      );
    }
  }
  return records;
}

/** Every record of a JSON Lines or JSON-array file; an unreadable, empty or malformed file is an InputError. */
export function readRecords(path: string): SourceRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const start = text.trimStart();
  if (start === '') throw new InputError(`${path} is empty`);
  const records = start.startsWith('[') ? jsonArrayRecords(path, text) : jsonLinesRecords(path, text);
  if (records.length === 0) throw new InputError(`${path} has no records`);
  return records;
}

/** The record as an object, or an InputError naming where it is and what it is instead. */
export function recordObject(path: string, rec: SourceRecord): Record<string, unknown> {
  if (!isObject(rec.value)) {
    const got = Array.isArray(rec.value) ? 'an array' : JSON.stringify(rec.value);
    throw new InputError(`${path} ${rec.at}: expected a JSON object, got ${got}`);
  }
  return rec.value;
}

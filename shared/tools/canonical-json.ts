// One text per JSON value whatever its key order (sorted keys), for comparing and keying values: argument
// `uniqueItems` checks and the ToolBench cache's key-order-independent lookup.
import { configure } from 'safe-stable-stringify';

const stringify = configure({ deterministic: true, circularValue: Error });

/** Two values get the same text exactly when they are equal JSON values. */
export function canonicalJson(value: unknown): string {
  return stringify(value) ?? 'null';
}

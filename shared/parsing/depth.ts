// How deeply a parsed JSON value nests, measured without recursion: a model can write arguments nested
// thousands deep, which JSON.parse accepts and every recursive consumer after it (JSON.stringify when the call
// is sent on, schema validation) turns into a RangeError.

/** Tool-call arguments nested deeper than this are a malformed call (the arguments object itself is level 1). */
export const MAX_ARGUMENT_DEPTH = 64;

/** True when `value` has an object or array nested more than `limit` levels deep. Linear, iterative. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

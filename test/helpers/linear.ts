// A complexity check that does not depend on the machine's speed or load: while `work()` runs, the characters
// that the string primitives a parser scans with examine (indexOf, lastIndexOf, includes, startsWith, slice,
// substring, JSON.parse) are counted, and the count must stay within `perChar` x the input's length. A parser that
// rescans the rest of the text per tag counts ~N * n / 2: hundreds of thousands of times the length on the
// megabyte inputs the tests give, against a handful for a single pass.
import { expect } from 'vitest';

type Fn = (this: string, ...args: never[]) => unknown;

export function countScanned(work: () => void): number {
  let scanned = 0;
  const proto = String.prototype as unknown as Record<string, Fn>;
  const saved: [string, Fn][] = [];
  const wrap = (name: string, cost: (s: string, args: unknown[], out: unknown) => number) => {
    const real = proto[name]!;
    saved.push([name, real]);
    proto[name] = function (this: string, ...args: never[]) {
      const out = real.apply(this, args);
      scanned += cost(String(this), args, out);
      return out;
    };
  };
  const from = (args: unknown[]) => Math.max(0, Number(args[1] ?? 0) || 0);
  wrap('indexOf', (s, a, out) => ((out as number) === -1 ? s.length : (out as number)) - from(a) + 1);
  wrap('lastIndexOf', (s, _a, out) => s.length - Math.max(0, out as number));
  wrap('includes', (s, a) => s.length - from(a));
  wrap('startsWith', (_s, a) => String(a[0]).length);
  wrap('slice', (_s, _a, out) => (out as string).length);
  wrap('substring', (_s, _a, out) => (out as string).length);
  const parse = JSON.parse;
  JSON.parse = ((text: string, reviver?: never) => {
    scanned += String(text).length;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    work();
  } finally {
    for (const [name, real] of saved) proto[name] = real;
    JSON.parse = parse;
  }
  return scanned;
}

/** `work` examines at most `perChar` characters per character of its `length`-long input. */
export function expectLinear(work: () => void, length: number, perChar = 20): void {
  const scanned = countScanned(work);
  expect(scanned / length, `characters examined per input character (${scanned} for ${length})`).toBeLessThan(
    perChar,
  );
}

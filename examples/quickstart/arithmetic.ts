// The seeded draws the arithmetic examples' data scripts share (quickstart, chained): three-digit operands of a
// sum or difference with a three-digit result, and a one-digit slip in copying a number. Call order is the data:
// changing it changes every generated file.
import { samplingStream } from '#shared/policy/rng';

export interface Operands {
  a: number;
  op: '+' | '-';
  b: number;
  /** `plus` / `minus`: the operator as the question writes it. */
  word: string;
  value: number;
}

export function arithmeticDraws(seed: number) {
  const rng = samplingStream(seed, 0, 0);
  const next = () => rng.next();
  const int = (lo: number, hi: number) => lo + Math.floor(rng.next() * (hi - lo + 1));
  const operands = (): Operands => {
    if (next() < 0.5) {
      const a = int(100, 899);
      const b = int(100, 999 - a);
      return { a, op: '+', b, word: 'plus', value: a + b };
    }
    const a = int(200, 999);
    const b = int(100, a - 100);
    return { a, op: '-', b, word: 'minus', value: a - b };
  };
  /** `n` with one of its digits replaced by another (never a leading zero). */
  const miscopy = (n: number): number => {
    const digits = String(n).split('');
    const at = int(0, digits.length - 1);
    let d: string;
    do d = String(int(at === 0 ? 1 : 0, 9));
    while (d === digits[at]);
    digits[at] = d;
    return Number(digits.join(''));
  };
  return { next, int, operands, miscopy };
}

// Weighted sums of reward parts that give exact totals for exact parts: in floating point
// 0.3 + 0.2 + 0.2 + 0.2 + 0.1 is 0.9999999999999999, and full marks should read (and compare equal to) 1.

/** Decimal places a weighted score keeps: far below any reward difference that matters to an advantage. */
export const SCORE_DECIMALS = 9;
const SCALE = 10 ** SCORE_DECIMALS;

/** sum_i weight_i * value_i, rounded to SCORE_DECIMALS places (the rounding removes the sum's binary error). */
export function weightedSum(terms: ReadonlyArray<readonly [weight: number, value: number]>): number {
  let sum = 0;
  for (const [weight, value] of terms) sum += weight * value;
  if (!Number.isFinite(sum)) return sum;
  // `+ 0` turns a rounded -0 into 0, so a zero score prints as 0.
  return Math.round(sum * SCALE) / SCALE + 0;
}

// weightedSum: exact parts give exact totals.
import { describe, expect, it } from 'vitest';
import { weightedSum } from '#shared/rewards/weighted';

describe('weightedSum', () => {
  it('gives exact totals where the plain float sum drifts', () => {
    // Plain sums: 0.3 + 0.2 + 0.2 + 0.2 + 0.1 = 0.9999999999999999; 0.1 + 0.2 = 0.30000000000000004.
    expect(weightedSum([0.3, 0.2, 0.2, 0.2, 0.1].map((w) => [w, 1] as const))).toBe(1);
    expect(
      weightedSum([
        [0.1, 1],
        [0.2, 1],
      ]),
    ).toBe(0.3);
  });
  it('keeps 9 decimals of inexact parts and never returns -0', () => {
    // 0.3 * 2/3 + 0.1 * 1/3 = 0.2 + 0.0333333333... = 0.233333333 (to 9 places)
    expect(
      weightedSum([
        [0.3, 2 / 3],
        [0.1, 1 / 3],
      ]),
    ).toBe(0.233333333);
    expect(Object.is(weightedSum([[-0.5, 1e-12]]), 0)).toBe(true);
    expect(weightedSum([])).toBe(0);
  });
});

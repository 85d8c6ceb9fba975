import { describe, expect, it } from 'vitest';
import { apiFunctionName, standardizeName } from '#shared/data/converters/toolbench-apis';
import { seededShuffle, splitTrainVal } from '#shared/data/split';

describe("StableToolBench's names", () => {
  it('standardizes tool names and keeps the last 64 characters of function names', () => {
    expect(standardizeName('Kick.com API | Kick API')).toBe('kick_com_api_kick_api');
    expect(standardizeName('1-Football API')).toBe('get_1_football_api');
    const long = apiFunctionName(
      'Get a very long endpoint name that goes on',
      'An equally long tool name for testing',
    );
    expect(long).toHaveLength(64);
    expect(long.endsWith('_for_an_equally_long_tool_name_for_testing')).toBe(true);
  });
});

describe('seeded split', () => {
  it('is a permutation, reproducible by seed and different across seeds', () => {
    const items = Array.from({ length: 50 }, (_, i) => i);
    const a = seededShuffle(items, 7);
    expect([...a].sort((x, y) => x - y)).toEqual(items);
    expect(seededShuffle(items, 7)).toEqual(a);
    expect(seededShuffle(items, 8)).not.toEqual(a);
  });

  it('puts round(n * ratio) rows in train', () => {
    const { train, val } = splitTrainVal(
      Array.from({ length: 10 }, (_, i) => i),
      0.75,
      0,
    );
    // round(7.5) = 8 train, 2 val.
    expect([train.length, val.length]).toEqual([8, 2]);
    expect(() => splitTrainVal([1, 2], 0.9, 0)).toThrow(/leaves no validation rows/);
    expect(() => splitTrainVal([1, 2], 0.1, 0)).toThrow(/leaves no training rows/);
  });
});

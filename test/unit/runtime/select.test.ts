// The choice `toolrl select` makes among a run's validated versions (shared/runtime/select.ts): the highest dev
// accuracy, and of equals the latest, whatever order the candidates come in.
import { describe, expect, it } from 'vitest';
import { chooseBest, SelectError } from '#shared/runtime/select';

describe('chooseBest', () => {
  it('takes the highest accuracy, not the last version', () => {
    expect(
      chooseBest([
        { version: 0, accuracy: 0.4 },
        { version: 12, accuracy: 0.71 },
        { version: 24, accuracy: 0.64 },
      ]),
    ).toBe(12);
    expect(
      chooseBest([
        { version: 24, accuracy: 0.8 },
        { version: 12, accuracy: 0.71 },
      ]),
    ).toBe(24);
  });

  it('breaks a tie for the later version, in any order', () => {
    const tied = [
      { version: 12, accuracy: 0.7 },
      { version: 24, accuracy: 0.7 },
      { version: 0, accuracy: 0.7 },
    ];
    expect(chooseBest(tied)).toBe(24);
    expect(chooseBest([...tied].reverse())).toBe(24);
  });

  it('refuses an empty list', () => {
    expect(() => chooseBest([])).toThrow(SelectError);
  });
});

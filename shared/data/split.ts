// Seeded shuffling and the train/validation split of `toolrl dataset convert --split`: the same seed
// gives the same split on every machine (xoroshiro128+ from pure-rand, Fisher-Yates).
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** A new array with the items in a seeded random order. */
export function seededShuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const rng = xoroshiro128plus(seed | 0);
  for (let i = out.length - 1; i > 0; i--) {
    const j = uniformInt(rng, 0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Shuffles with `seed`, then puts round(n * trainRatio) items in train and the rest in val. Both sides must
 * end up non-empty, else the ratio does not fit the data and the caller is told how.
 */
export function splitTrainVal<T>(
  items: readonly T[],
  trainRatio: number,
  seed: number,
): { train: T[]; val: T[] } {
  if (!(trainRatio > 0 && trainRatio < 1))
    throw new RangeError(`train ratio must be in (0, 1), got ${trainRatio}`);
  const nTrain = Math.round(items.length * trainRatio);
  if (nTrain === 0 || nTrain === items.length) {
    throw new RangeError(
      `a train ratio of ${trainRatio} over ${items.length} rows leaves ${nTrain === 0 ? 'no training' : 'no validation'} rows`,
    );
  }
  const shuffled = seededShuffle(items, seed);
  return { train: shuffled.slice(0, nTrain), val: shuffled.slice(nTrain) };
}

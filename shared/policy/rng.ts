// Seedable random streams for sampling. Each (seed, sampleIndex, turn) gets its own stream, so a turn
// samples the same tokens whichever process runs it and however the group is batched.
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** A source of uniform doubles in [0, 1). */
export interface Uniform {
  next(): number;
}

// MurmurHash3's 32-bit finaliser: spreads nearby inputs (sample 0, 1, 2…) over the whole seed space.
function fmix32(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** The 32-bit seed of one stream: a hash of the run's seed, the sample's index in its group and the turn. */
export function streamSeed(seed: number, sampleIndex: number, turn: number): number {
  let h = fmix32(seed >>> 0) ^ Math.floor(seed / 2 ** 32);
  h = fmix32(h ^ Math.imul(sampleIndex + 1, 0x9e3779b1));
  h = fmix32(h ^ Math.imul(turn + 1, 0x7feb352d));
  return h | 0;
}

/** The stream that samples turn `turn` of sample `sampleIndex` under `seed` (xoroshiro128+, 53-bit doubles). */
export function samplingStream(seed: number, sampleIndex: number, turn: number): Uniform {
  const rng = xoroshiro128plus(streamSeed(seed, sampleIndex, turn));
  return { next: () => uniformFloat64(rng) };
}

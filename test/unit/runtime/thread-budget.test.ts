// The embedded run's thread and memory budget: the rollout decoder takes half the cores (the learner keeps them all)
// and a sixth of the memory for its KV cache, and the learner's OpenMP workers wait passively unless the user chose
// otherwise.
import { describe, expect, it } from 'vitest';
import { embeddedKvCacheBytes, embeddedLearnerEnv, embeddedOrtThreads } from '#shared/runtime/embedded';

describe('embedded thread budget', () => {
  it('gives the rollout decoder half the cores, at least one', () => {
    expect([1, 2, 3, 8].map((cores) => embeddedOrtThreads(cores))).toEqual([1, 1, 1, 4]);
  });

  it("keeps a sixth of the machine's memory as the rollout decoder's KV cache, between 1 and 4 GiB", () => {
    const gib = 2 ** 30;
    expect([2, 6, 12, 24, 128].map((g) => embeddedKvCacheBytes(g * gib, {}) / gib)).toEqual([1, 1, 2, 4, 4]);
  });

  it('takes TOOLRL_KV_CACHE_MB instead when it is set, and refuses a value that is not a whole number of MiB', () => {
    const gib = 2 ** 30;
    expect(embeddedKvCacheBytes(24 * gib, { TOOLRL_KV_CACHE_MB: '512' })).toBe(512 * 2 ** 20);
    expect(embeddedKvCacheBytes(2 * gib, { TOOLRL_KV_CACHE_MB: '6144' })).toBe(6 * gib);
    expect(embeddedKvCacheBytes(24 * gib, { TOOLRL_KV_CACHE_MB: '' })).toBe(4 * gib);
    for (const bad of ['0', '1.5', 'lots', '-3']) {
      expect(() => embeddedKvCacheBytes(24 * gib, { TOOLRL_KV_CACHE_MB: bad })).toThrow(
        `TOOLRL_KV_CACHE_MB must be a whole number of MiB, at least 1; got "${bad}"`,
      );
    }
  });

  it("sets OpenMP's passive waiting for the learner, keeping a value the user set, and ties it to this process", () => {
    expect(embeddedLearnerEnv({})).toEqual({
      OMP_WAIT_POLICY: 'PASSIVE',
      TOOLRL_DIE_WITH_PARENT: String(process.pid),
    });
    expect(embeddedLearnerEnv({ OMP_WAIT_POLICY: 'ACTIVE' })).toMatchObject({ OMP_WAIT_POLICY: 'ACTIVE' });
  });
});

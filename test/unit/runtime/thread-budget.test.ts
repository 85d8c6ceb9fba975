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
    expect([2, 6, 12, 24, 128].map((g) => embeddedKvCacheBytes(g * gib) / gib)).toEqual([1, 1, 2, 4, 4]);
  });

  it("sets OpenMP's passive waiting for the learner, keeping a value the user set, and ties it to this process", () => {
    expect(embeddedLearnerEnv({})).toEqual({
      OMP_WAIT_POLICY: 'PASSIVE',
      TOOLRL_DIE_WITH_PARENT: String(process.pid),
    });
    expect(embeddedLearnerEnv({ OMP_WAIT_POLICY: 'ACTIVE' })).toMatchObject({ OMP_WAIT_POLICY: 'ACTIVE' });
  });
});

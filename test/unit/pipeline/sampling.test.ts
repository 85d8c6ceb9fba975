// The rollout stage's sampling per split: train groups sample as `rollout` says, validation groups as
// `rollout.val_kwargs` says (greedy by default, as verl validates).
import { describe, expect, it } from 'vitest';
import { samplingParams } from '#shared/policy/sampler';
import { RunConfigSchema } from '#shared/schemas/config/run';

const config = (rollout: Record<string, unknown>) =>
  RunConfigSchema.parse({ model: { path: 'tiny' }, data: { train: 'a.parquet' }, rollout });

describe('samplingParams', () => {
  it('train groups take the rollout temperature, top-p and top-k; validation is greedy by default', () => {
    const c = config({ temperature: 0.9, top_p: 0.95, top_k: 50, max_new_tokens: 64 });
    expect(samplingParams(c.rollout, 7, 'train')).toMatchObject({
      temperature: 0.9,
      topP: 0.95,
      topK: 50,
      seed: 7,
    });
    expect(samplingParams(c.rollout, 7, 'val')).toMatchObject({
      temperature: 0,
      topP: 1,
      topK: 0,
      maxNewTokens: 64,
    });
  });

  it('validation samples with val_kwargs when given', () => {
    const c = config({ temperature: 0.9, val_kwargs: { temperature: 0.6, top_p: 0.9, n: 4 } });
    expect(samplingParams(c.rollout, 1, 'val')).toMatchObject({ temperature: 0.6, topP: 0.9, topK: 0 });
  });
});

import { describe, expect, it } from 'vitest';
import { samplingStream, streamSeed, type Uniform } from '#shared/policy/rng';
import { checkSamplingParams, DEFAULT_SAMPLING, Sampler, type SamplingParams } from '#shared/policy/sampler';

// logits = ln [1, 2, 3, 4]: at T = 1 the probabilities are [0.1, 0.2, 0.3, 0.4].
const logits = Float32Array.from([1, 2, 3, 4].map(Math.log));
const params = (over: Partial<SamplingParams>): SamplingParams => ({ ...DEFAULT_SAMPLING, ...over });
const fixed = (u: number): Uniform => ({ next: () => u });

function frequencies(s: SamplingParams, n: number): number[] {
  const sampler = new Sampler(4);
  const rng = samplingStream(7, 0, 0);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) counts[sampler.draw(logits, s, rng).token]!++;
  return counts.map((c) => c / n);
}

describe('Sampler log-probs', () => {
  it('records log softmax(logits) at T = 1', () => {
    const d = new Sampler(4).draw(logits, params({}), fixed(0.95)); // 0.95 falls in the last bin (0.6, 1.0]
    expect(d.token).toBe(3);
    expect(d.logprob).toBeCloseTo(Math.log(0.4), 6);
  });

  it('records log softmax(logits / T) at T = 2, whatever top-k/top-p narrowed the draw to', () => {
    // w = [1, 2, 3, 4]^(1/2) = [1, 1.41421, 1.73205, 2]; Z = 6.14626; log(2 / 6.14626) = log(0.325401) = -1.12270
    const d = new Sampler(4).draw(logits, params({ temperature: 2, topK: 1 }), fixed(0.5));
    expect(d.token).toBe(3);
    expect(d.logprob).toBeCloseTo(-1.1227, 4);
  });

  it('greedy (T = 0) takes the argmax and records the log-prob at T = 1', () => {
    const d = new Sampler(4).draw(logits, params({ temperature: 0 }), fixed(0));
    expect(d).toEqual({ token: 3, logprob: expect.closeTo(Math.log(0.4), 6) });
  });

  it('rejects a row with no finite logit', () => {
    expect(() =>
      new Sampler(2).draw(Float32Array.from([Number.NaN, Number.NaN]), params({}), fixed(0)),
    ).toThrow(/NaN\/Inf/);
  });
});

describe('Sampler draws', () => {
  it('follows the softmax without filtering', () => {
    const f = frequencies(params({}), 40_000);
    for (const [i, p] of [0.1, 0.2, 0.3, 0.4].entries()) expect(f[i]).toBeCloseTo(p, 1.5);
  });

  it('top-k = 2 keeps tokens 3 and 2 in proportion 4 : 3', () => {
    const f = frequencies(params({ topK: 2 }), 40_000);
    expect(f[0]! + f[1]!).toBe(0);
    expect(f[3]).toBeCloseTo(4 / 7, 1.5);
  });

  it('top-p keeps the smallest heaviest set reaching p', () => {
    // p = 0.5: 0.4 < 0.5, 0.4 + 0.3 >= 0.5 -> {3, 2}; p = 0.39: 0.4 >= 0.39 -> {3}
    expect(frequencies(params({ topP: 0.5 }), 5_000).map((x) => x > 0)).toEqual([false, false, true, true]);
    expect(frequencies(params({ topP: 0.39 }), 1_000)).toEqual([0, 0, 0, 1]);
  });

  it('top-p is taken inside the top-k mass (HF warper order)', () => {
    // top-k 3 -> {3, 2, 1}, mass 0.9; p = 0.5 -> target 0.45: 0.4 < 0.45, 0.7 >= 0.45 -> {3, 2}
    expect(frequencies(params({ topK: 3, topP: 0.5 }), 5_000).map((x) => x > 0)).toEqual([
      false,
      false,
      true,
      true,
    ]);
  });

  it('finds the same nucleus as a full sort on a large random vocabulary', () => {
    const V = 5000;
    const rng = samplingStream(1, 0, 0);
    const row = Float32Array.from({ length: V }, () => 8 * rng.next());
    const sampler = new Sampler(V);
    for (const [topP, topK] of [
      [0.9, 0],
      [0.3, 0],
      [0.8, 50],
      [1, 17],
    ] as const) {
      // reference: sort by probability, keep top-k, then the smallest prefix whose mass reaches p of the kept mass
      const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => row[b]! - row[a]! || a - b);
      const w = order.map((i) => Math.exp(row[i]! - row[order[0]!]!));
      const kept = topK > 0 ? topK : V;
      const mass = w.slice(0, kept).reduce((a, b) => a + b, 0);
      let cum = 0;
      let n = 0;
      while (n < kept && cum < topP * mass) cum += w[n++]!;
      const s = params({ topP, topK });
      // u -> 0 draws the heaviest kept token, u -> 1 the lightest kept one
      expect(sampler.draw(row, s, fixed(0)).token).toBe(order[0]);
      expect(sampler.draw(row, s, fixed(1 - 1e-12)).token).toBe(order[n - 1]);
    }
  });
});

describe('sampling streams', () => {
  it('are reproducible per (seed, sample, turn) and differ between samples and turns', () => {
    const take = (u: Uniform) => Array.from({ length: 4 }, () => u.next());
    expect(take(samplingStream(3, 1, 2))).toEqual(take(samplingStream(3, 1, 2)));
    expect(take(samplingStream(3, 1, 2))).not.toEqual(take(samplingStream(3, 2, 2)));
    expect(take(samplingStream(3, 1, 2))).not.toEqual(take(samplingStream(3, 1, 3)));
    expect(new Set([0, 1, 2, 3].map((i) => streamSeed(0, i, 0))).size).toBe(4);
  });

  it('give doubles in [0, 1)', () => {
    const u = samplingStream(0, 0, 0);
    for (let i = 0; i < 1000; i++) {
      const x = u.next();
      expect(x >= 0 && x < 1).toBe(true);
    }
  });
});

describe('checkSamplingParams', () => {
  it.each([
    [{ temperature: -1 }, /temperature/],
    [{ topP: 0 }, /topP/],
    [{ topK: 1.5 }, /topK/],
    [{ maxNewTokens: 0 }, /maxNewTokens/],
    [{ maxTotalResponseTokens: 0 }, /maxTotalResponseTokens/],
  ])('names the bad field %o', (over, msg) => {
    expect(() => checkSamplingParams(params(over))).toThrow(msg);
  });
});

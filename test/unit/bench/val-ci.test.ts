import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bootstrapMean, promptScores } from '../../../bench/learning/val-ci.ts';

describe('bootstrapMean', () => {
  it('is the mean with an interval around it, the same every time, narrower with more prompts', () => {
    const few = [0, 0.25, 0.5, 1, 0, 0.75, 1, 0.25];
    const a = bootstrapMean(few, 2000);
    expect(a.mean).toBeCloseTo(0.46875, 12);
    expect(a.low).toBeLessThan(a.mean);
    expect(a.high).toBeGreaterThan(a.mean);
    expect(bootstrapMean(few, 2000)).toEqual(a);
    const many = bootstrapMean(
      Array.from({ length: 8 * 16 }, (_, i) => few[i % 8]!),
      2000,
    );
    expect(many.mean).toBeCloseTo(a.mean, 12);
    expect(many.high - many.low).toBeLessThan((a.high - a.low) / 2);
  });

  it('has no width when every prompt scores alike, and refuses no prompts', () => {
    expect(bootstrapMean([0.5, 0.5, 0.5], 100)).toEqual({ mean: 0.5, low: 0.5, high: 0.5 });
    expect(() => bootstrapMean([])).toThrow(/no prompts/);
  });
});

describe('promptScores', () => {
  it("averages each validation group's samples: the accuracy component and the reward", () => {
    const dir = mkdtempSync(join(tmpdir(), 'val-ci-'));
    try {
      mkdirSync(join(dir, 'groups'));
      const traj = (reward: number, acc?: number) => ({
        reward,
        rewardComponents: acc === undefined ? {} : { 'toolcall/final_answer': acc },
      });
      const put = (name: string, trajectories: unknown[]) =>
        writeFileSync(join(dir, 'groups', name), JSON.stringify({ trajectories }));
      put('val-v8-p0.json', [traj(1, 1), traj(0.5, 0), traj(1, 1), traj(0, 0)]);
      put('val-v8-p1.json', [traj(0.25, 0), traj(0.25, 0), traj(0.25, 0), traj(0.25, 0)]);
      put('val-v0-p0.json', [traj(0, 0)]);
      put('e0-p3.json', [traj(1, 1)]);
      const scores = promptScores(dir, 8, 'toolcall/final_answer').sort((x, y) => x.reward - y.reward);
      expect(scores).toEqual([
        { accuracy: 0, reward: 0.25 },
        { accuracy: 0.5, reward: 0.625 },
      ]);
      expect(() => promptScores(dir, 16, 'toolcall/final_answer')).toThrow(/no validation groups of v16/);
      put('val-v9-p0.json', [traj(1)]);
      expect(() => promptScores(dir, 9, 'toolcall/final_answer')).toThrow(/without toolcall\/final_answer/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

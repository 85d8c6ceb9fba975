// How sure a run's validation numbers are: for each validated policy version of a finished `toolrl train` run folder,
// the accuracy and the mean reward with a 95% bootstrap interval over the validation prompts (the prompts are the
// sample; a prompt's samples stay together, since they share its question). Use it to read a difference between two
// runs or two versions: one validation of 64 questions x 4 samples moves by several points between seeds.
//   npx tsx bench/learning/val-ci.ts RUN_DIR [--versions 0,8] [--resamples 10000]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { samplingStream } from '#shared/policy/rng';
import { readEvalSummaries } from '../run-folder.ts';

export interface PromptScores {
  /** Mean of the accuracy component over the prompt's samples. */
  accuracy: number;
  reward: number;
}

export interface Interval {
  mean: number;
  low: number;
  high: number;
}

/**
 * The mean over prompts and its 95% percentile bootstrap interval: `resamples` draws of as many prompts with
 * replacement, from a fixed seed (the same folder gives the same interval).
 */
export function bootstrapMean(values: readonly number[], resamples = 10000, seed = 0): Interval {
  if (values.length === 0) throw new Error('no prompts to resample');
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  const rng = samplingStream(seed, 0, 0);
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < values.length; i++) s += values[Math.floor(rng.next() * values.length)]!;
    means[r] = s / values.length;
  }
  means.sort();
  return { mean, low: means[Math.floor(0.025 * resamples)]!, high: means[Math.ceil(0.975 * resamples) - 1]! };
}

/** Per-prompt scores of one version's validation groups (groups/val-v<N>-p<i>.json). */
export function promptScores(runDir: string, version: number, accuracyComponent: string): PromptScores[] {
  const dir = join(runDir, 'groups');
  const files = readdirSync(dir).filter((f) => f.startsWith(`val-v${version}-p`) && f.endsWith('.json'));
  if (files.length === 0) throw new Error(`${dir}: no validation groups of v${version}`);
  return files.map((f) => {
    const g = JSON.parse(readFileSync(join(dir, f), 'utf8')) as {
      trajectories: { reward: number; rewardComponents?: Record<string, number> }[];
    };
    const n = g.trajectories.length;
    const acc = g.trajectories.map((t) => {
      const v = t.rewardComponents?.[accuracyComponent];
      if (v === undefined) throw new Error(`${join(dir, f)}: a trajectory without ${accuracyComponent}`);
      return v;
    });
    return {
      accuracy: acc.reduce((s, v) => s + v, 0) / n,
      reward: g.trajectories.reduce((s, t) => s + t.reward, 0) / n,
    };
  });
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { versions: { type: 'string' }, resamples: { type: 'string', default: '10000' } },
  });
  const runDir = positionals[0];
  if (!runDir)
    throw new Error('usage: npx tsx bench/learning/val-ci.ts RUN_DIR [--versions 0,8] [--resamples N]');
  const summaries = readEvalSummaries(runDir);
  const want = values.versions?.split(',').map(Number);
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  process.stdout.write(
    '| policy version | prompts x samples | accuracy (95% interval) | reward (95% interval) |\n|---|---|---|---|\n',
  );
  for (const s of summaries.filter((x) => !want || want.includes(x.policyVersion))) {
    if (!s.accuracyComponent)
      throw new Error(`${runDir}: v${s.policyVersion}'s validation names no accuracy component`);
    const scores = promptScores(runDir, s.policyVersion, s.accuracyComponent);
    const resamples = Number(values.resamples);
    const a = bootstrapMean(
      scores.map((p) => p.accuracy),
      resamples,
    );
    const r = bootstrapMean(
      scores.map((p) => p.reward),
      resamples,
    );
    process.stdout.write(
      `| v${s.policyVersion} | ${scores.length} x ${s.samplesPerPrompt} | ${pct(a.mean)} (${pct(a.low)}-${pct(a.high)}) | ${r.mean.toFixed(3)} (${r.low.toFixed(3)}-${r.high.toFixed(3)}) |\n`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();

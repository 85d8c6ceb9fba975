// The README's first command at its short length, exactly as other checks run it:
// `toolrl train examples/quickstart/run.yaml --max-steps 16 --workdir DIR` — the real CLI, the shipped config and
// data, the SFT warm start, 16 GRPO steps, validation at the start and the end, and every output the README lists.
//
// It is also the learning guard: in deterministic mode (the shipped config) the same seed gives the same run, and
// 16 RL steps must raise validation accuracy and reward above the warm start's by margins set well below what those
// steps give (measured below); a change that stops the RL stage from teaching fails it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RunStatusSchema } from '#shared/schemas/run-status';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { HANG_MS } from '../helpers/hang.ts';

const STEPS = 16;
/** Accuracy (mean@4) and reward the 16 RL steps must add at least (seed 0 measured +28 to +30 points at v16). */
const MIN_ACCURACY_GAIN = 0.1;
const MIN_REWARD_GAIN = 0.05;

const work = mkdtempSync(join(tmpdir(), 'toolrl-quickstart-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('examples/quickstart/run.yaml', () => {
  it('--max-steps 16 trains, validates, writes every output the README lists and improves the policy', () => {
    const run = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'bin', 'toolrl.mjs'),
        'train',
        'examples/quickstart/run.yaml',
        '--max-steps',
        String(STEPS),
        '--workdir',
        work,
        '--json',
      ],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: HANG_MS, maxBuffer: 64 << 20 },
    );
    expect(run.status, run.stderr.slice(-3000)).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({ status: 'completed', learner: { step: STEPS, done: true } });
    // Progress went to stderr: the warm start, then the start and end validation.
    expect(run.stderr).toMatch(/SFT warm start \d+\/700/);
    expect(run.stderr).toMatch(
      /start +v0: accuracy [\d.]+% \(mean@4\), pass@4 [\d.]+%, reward [-\d.]+ ± [\d.]+, tool calls\/trajectory/,
    );

    const dir: string = result.runDir;
    expect(RunStatusSchema.parse(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))).status).toBe(
      'completed',
    );
    const rows = readFileSync(join(dir, 'metrics', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    for (const r of rows)
      for (const k of [
        'policy_version',
        'reward_mean',
        'reward_std',
        'tool_calls_per_trajectory',
        'groups',
        'dropped_groups',
      ])
        expect(r[k], k).toEqual(expect.any(Number));
    // Validation at v0 and at the final version, sampled 4 per prompt (val_kwargs) over the 64 shipped prompts.
    const evals = readdirSync(join(dir, 'metrics', 'eval')).sort();
    expect(evals).toEqual(['v0.json', `v${STEPS}.json`]);
    const first = JSON.parse(readFileSync(join(dir, 'metrics', 'eval', 'v0.json'), 'utf8'));
    const last = JSON.parse(readFileSync(join(dir, 'metrics', 'eval', `v${STEPS}.json`), 'utf8'));
    expect(last).toMatchObject({ prompts: 64, trajectories: 256 });
    // The guard: the RL stage taught the task (same seed, deterministic mode: the same numbers every run here).
    expect(last.accuracy - first.accuracy, JSON.stringify({ first, last })).toBeGreaterThanOrEqual(
      MIN_ACCURACY_GAIN,
    );
    expect(last.rewardMean - first.rewardMean).toBeGreaterThanOrEqual(MIN_REWARD_GAIN);
    expect(statSync(join(dir, 'metrics', 'reward_curve.png')).size).toBeGreaterThan(1000);
    expect(
      readdirSync(join(dir, 'metrics', 'tensorboard')).some((f) => f.startsWith('events.out.tfevents')),
    ).toBe(true);
    expect(readdirSync(join(dir, 'trajectories')).length).toBeGreaterThan(0);
    // Policy versions (trainer.keep_policy_versions: needed): v0, v16 (validated, checkpointed, final) and the newest
    // max_staleness + 2 stay, each whole; the others were deleted as the run went.
    const versions = readdirSync(join(dir, 'policy')).filter((f) => /^v\d+$/.test(f));
    expect(versions.map((f) => Number(f.slice(1))).sort((x, y) => x - y)).toEqual([
      0,
      STEPS - 2,
      STEPS - 1,
      STEPS,
    ]);
    for (const v of versions) {
      const manifest = JSON.parse(readFileSync(join(dir, 'policy', v, 'manifest.json'), 'utf8'));
      for (const name of Object.keys(manifest.files))
        expect(existsSync(join(dir, 'policy', v, name)), `${v}/${name}`).toBe(true);
    }
    expect(readdirSync(join(dir, 'checkpoints')).length).toBeGreaterThan(0);
  });
});

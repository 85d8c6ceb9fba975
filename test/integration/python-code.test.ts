// A user's Python tool class (written against verl's BaseTool) and Python reward function (verl's compute_score)
// train on the embedded default without edits: 2 learner steps of the tiny model, warm-started to call the
// calculator, where `calculator` is the verl-style class of test/fixtures/pytools run by the Python tool host.
// The warm start memorises the two rows' own correct calls (offering the user's tool schema), checked before the
// assertions, so that calls are made on any CPU.
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { lastSftLoss, memoriseSft, rowDemonstrations } from '../helpers/demonstrations.ts';
import { quickstartRows, scoredGroups, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const run = tinyRun('python-code');
afterAll(() => run.close());

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures');

describe('Python tools and rewards in an embedded run', () => {
  it('runs the verl-style tool per trajectory and scores with compute_score and the tool rewards', async () => {
    // GIVEN the user's files next to the config, as they wrote them: a tool class (and the verl modules it
    // imports), a tools file naming it by dotted path, and a reward file
    for (const f of ['calc_tool.py', 'tools.yaml', 'verl'])
      cpSync(join(FIXTURES, 'pytools', f), join(run.dir, f), { recursive: true });
    cpSync(join(FIXTURES, 'rewards', 'verl_reward.py'), join(run.dir, 'verl_reward.py'));
    // verl's preprocessing puts the ground truth where the tool's create() reads it
    const rows: DatasetRow[] = (await quickstartRows('train')).slice(0, 2).map((r) => ({
      ...r,
      extra_info: {
        ...r.extra_info,
        tools_kwargs: {
          calculator: { create_kwargs: { ground_truth: String(r.reward_model.ground_truth) } },
        },
      },
    }));
    run.dataset('train.parquet', rows);
    const toolsFile = parseYaml(readFileSync(join(run.dir, 'tools.yaml'), 'utf8')) as {
      tools: { tool_schema: unknown }[];
    };
    writeFileSync(join(run.dir, 'sft.jsonl'), rowDemonstrations(rows, toolsFile.tools[0]!.tool_schema));
    const config = tinyConfig({
      // a Hermes calculator call is about 40 of the tiny model's tokens
      rollout: { n: 4, max_new_tokens: 48 },
      trainer: { sft: memoriseSft('sft.jsonl') },
      reward: {
        functions: [
          { path: 'verl_reward.py', name: 'compute_score', weight: 1 },
          { name: 'tool_reward', weight: 0.5, config: { step_rewards: true } },
        ],
      },
    });
    config.tools = { config_file: 'tools.yaml' };

    // WHEN it trains 2 steps
    const result = await run.run(config, 2);

    // THEN the run completes, and the calls the model made ran in the Python class
    console.log(
      'SFT',
      run.learnerLines
        .filter((l) => l.type === 'sft')
        .map((l) => l.loss.toFixed(4))
        .join(' '),
    );
    expect(lastSftLoss(run.learnerLines), 'the warm start memorised the rows').toBeLessThan(0.02);
    expect(result.reason).toBeNull();
    expect(result.status).toBe('completed');
    const trajectories = [...scoredGroups(result).values()].flatMap((g) => g.trajectories);
    const calls = trajectories.flatMap((t) => t.turns.flatMap((u) => u.toolCalls));
    const ran = calls.filter((c) => c.name === 'calculator' && c.result.ok);
    expect(
      ran.length,
      `calculator calls that ran, of ${JSON.stringify(calls.slice(0, 6))} ${JSON.stringify(trajectories.map((t) => [t.finishReason, t.turns.map((u) => u.parseErrors)]))}`,
    ).toBeGreaterThan(0);
    for (const c of ran) {
      // execute's (ToolResponse, step reward, metrics) came back whole
      expect(c.result.output).toMatch(/^-?\d+(\.\d+)?$/);
      expect([0, -0.05]).toContain(c.result.reward);
      expect(c.result.metrics).toEqual({ calls: expect.any(Number) });
    }
    for (const t of trajectories) {
      const called = t.turns.some((u) => u.toolCalls.some((c) => c.name === 'calculator' && c.result.ok));
      // compute_score's dict: its score and numbers, no error
      expect(t.rewardComponents['verl_reward.compute_score/error']).toBe(0);
      expect(t.rewardComponents['verl_reward.compute_score/acc']).toEqual(expect.any(Number));
      expect(t.rewardErrors).toBeUndefined();
      // calc_reward at the trajectory's end, for each trajectory that called the tool, reached the reward
      // (as verl's rollout_reward_scores) and the tool_reward part
      if (called) {
        expect([0, 1]).toContain(t.rewardComponents['tool/calculator']);
        expect(t.rewardComponents['verl_reward.compute_score/tool_reward']).toBe(
          t.rewardComponents['tool/calculator'],
        );
      } else expect(t.rewardComponents['tool/calculator']).toBeUndefined();
      const steps = t.turns.flatMap((u) =>
        u.toolCalls.flatMap((c) => (c.result.reward !== undefined ? [c.result.reward] : [])),
      );
      expect(t.rewardComponents.tool_reward).toBeCloseTo(
        (t.rewardComponents['tool/calculator'] ?? 0) + steps.reduce((a, b) => a + b, 0),
        9,
      );
    }
    // The learner logs the parts as step metrics.
    for (const s of stepMetrics(result)) {
      expect(s['reward/verl_reward.compute_score']).toEqual(expect.any(Number));
      expect(s['reward/verl_reward.compute_score/error']).toBe(0);
    }
  });
});

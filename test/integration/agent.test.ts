// Bring your own agent on the embedded default, end to end: `train()` with `rollout.agent` naming a Python agent
// written with the `openai` client (test/fixtures/agents/pipeline_agent.py), the tiny model after a short warm
// start, 2 steps. Every episode reaches the reward stage as a trajectory (no tool-call stage: the agent ran its own
// calculator), the reward reads what the agent reported (`extra_info["agent"]`), an agent that throws ends its
// episode with `error` without failing the group, and the learner trains on the groups.
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { quickstartRows, scoredGroups, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'agents');
const run = tinyRun('agent');
afterAll(() => run.close());

describe('rollout.agent on the embedded default', () => {
  it('trains 2 steps on episodes its agent ran, with the exact tokens and what the agent reported', {
    timeout: 900_000,
  }, async () => {
    // GIVEN the agent and a reward reading its report next to the config, 2 prompts per step, 2 samples each,
    // and a short warm start so that the model writes calls
    copyFileSync(join(FIXTURES, 'pipeline_agent.py'), join(run.dir, 'pipeline_agent.py'));
    copyFileSync(join(FIXTURES, 'agent_reward.py'), join(run.dir, 'agent_reward.py'));
    run.dataset('train.parquet', (await quickstartRows('train')).slice(0, 4));
    run.demonstrations();
    const config = tinyConfig({
      rollout: {
        n: 2,
        max_new_tokens: 32,
        agent: { path: 'pipeline_agent.py', name: 'run', timeout: 300 },
        multi_turn: { max_turns: 3, max_total_response_length: 120 },
      },
      tools: { tools: [] },
      reward: {
        functions: [
          { name: 'toolcall', weight: 1 },
          { path: 'agent_reward.py', name: 'compute_score', weight: 0 },
        ],
      },
      trainer: {
        batch_prompts: 2,
        sft: { data: 'sft.parquet', steps: 60, lr: 5.0e-3, batch_size: 16 },
      },
    });

    // WHEN it trains 2 steps
    const result = await run.run(config, 2);

    // THEN both steps trained, on groups of 2 trajectories each
    expect(result.status).toBe('completed');
    const steps = stepMetrics(result);
    expect(steps.map((s) => s.step)).toEqual([1, 2]);
    const groups = [...scoredGroups(result).values()].filter((g) => g.split === 'train');
    expect(groups.length).toBeGreaterThanOrEqual(4);
    for (const g of groups) {
      expect(g.trajectories.map((t) => t.sampleIndex)).toEqual([0, 1]);
      const [ok, failed] = g.trajectories;
      // Sample 1's agent threw after its first request: its episode ends with error, its sampled turn kept.
      expect(failed!.finishReason).toBe('error');
      expect(failed!.turns).toHaveLength(1);
      expect(failed!.rewardComponents['agent_reward.compute_score/agent_failed']).toBe(1);
      expect(failed!.rewardComponents['agent_reward.compute_score/agent_requests']).toBe(1);
      // Sample 0 ran to its end (an answer, or a limit of the run).
      expect(['eos', 'length', 'max_turns', 'max_total_response_length']).toContain(ok!.finishReason);
      expect(ok!.rewardComponents['agent_reward.compute_score/agent_failed']).toBe(0);
      // One request per turn, and one more that was refused when the episode ended at its token budget.
      const refused = ok!.finishReason === 'max_total_response_length' ? [0, 1] : [0];
      expect(refused.map((r) => ok!.turns.length + r)).toContain(
        ok!.rewardComponents['agent_reward.compute_score/agent_requests'],
      );
      for (const t of g.trajectories) {
        // One token sequence per episode; every sampled token has its turn's version and a log-prob.
        expect(t.segments).toBeUndefined();
        const sampled = t.lossMask.reduce((n: number, m) => n + m, 0);
        expect(sampled).toBe(t.turns.reduce((n, u) => n + (u.tokenEnd - u.tokenStart), 0));
        for (const u of t.turns) {
          expect(t.lossMask.slice(u.tokenStart, u.tokenEnd).every((m) => m === 1)).toBe(true);
          expect(new Set(t.policyVersions.slice(u.tokenStart, u.tokenEnd))).toEqual(
            new Set([u.policyVersion]),
          );
        }
      }
    }
    // The agent's calls were recorded with the results it sent back, where the model made any.
    const calls = groups.flatMap((g) => g.trajectories[0]!.turns.flatMap((u) => u.toolCalls));
    for (const c of calls)
      expect(c.result.ok ? c.result.output : c.result.error?.message).toEqual(expect.any(String));
    // Nothing went through the tool-call stage, and nothing was dead-lettered.
    expect(readdirSync(result.runDir)).not.toContain('dead-letters');
    expect(steps[0]!['finish/error']).toBe(0.5);
  });
});

// Bring your own agent on the embedded default, end to end: `train()` with `rollout.agent` naming a Python agent
// written with the `openai` client (test/fixtures/agents/pipeline_agent.py), the tiny model after a warm start that
// memorises the rows' calls, 2 steps. Every episode reaches the reward stage as a trajectory (no tool-call stage: the
// agent ran its own calculator), the reward reads what the agent reported (`extra_info["agent"]`), an agent that
// throws ends its episode with `error` without failing the group, and the learner trains on the groups.
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { lastSftLoss, memoriseSft, rowDemonstrations } from '../helpers/demonstrations.ts';
import { HANG_MS } from '../helpers/hang.ts';
import { quickstartRows, scoredGroups, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'agents');
/** The calculator schema pipeline_agent.py offers. */
const CALCULATOR = {
  type: 'function',
  function: {
    name: 'calculator',
    description: 'Evaluate an arithmetic expression.',
    parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
};
const run = tinyRun('agent');
afterAll(() => run.close());

describe('rollout.agent on the embedded default', () => {
  it('trains 2 steps on episodes its agent ran, with the exact tokens and what the agent reported', async () => {
    // GIVEN the agent and a reward reading its report next to the config, 2 prompts per step, 2 samples each,
    // and a warm start that memorises the rows' calls (checked below) so that the model writes them on any CPU
    copyFileSync(join(FIXTURES, 'pipeline_agent.py'), join(run.dir, 'pipeline_agent.py'));
    copyFileSync(join(FIXTURES, 'agent_reward.py'), join(run.dir, 'agent_reward.py'));
    const rows = (await quickstartRows('train')).slice(0, 4);
    run.dataset('train.parquet', rows);
    // The warm start memorises these rows' calls, offering the calculator exactly as the agent offers it.
    writeFileSync(join(run.dir, 'sft.jsonl'), rowDemonstrations(rows, CALCULATOR));
    const config = tinyConfig({
      rollout: {
        n: 2,
        // a Hermes calculator call is about 40 of the tiny model's tokens
        max_new_tokens: 48,
        // no episode ends for the machine's speed: the one bound is the suite's hang guard
        agent: { path: 'pipeline_agent.py', name: 'run', timeout: HANG_MS / 1000 },
        multi_turn: { max_turns: 3, max_total_response_length: 160 },
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
        sft: memoriseSft('sft.jsonl'),
      },
    });

    // WHEN it trains 2 steps
    const result = await run.run(config, 2);

    // THEN both steps trained, on groups of 2 trajectories each
    expect(lastSftLoss(run.learnerLines), 'the warm start memorised the rows').toBeLessThan(0.02);
    expect(result.reason).toBeNull();
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
    // The agent ran the calls the model wrote with its own calculator, and its results are the calls' results.
    const calls = groups.flatMap((g) => g.trajectories[0]!.turns.flatMap((u) => u.toolCalls));
    const ran = calls.filter((c) => c.result.ok);
    expect(ran.length, 'calls the agent ran').toBeGreaterThan(0);
    for (const c of ran) {
      const m = /^(\d+) ([+-]) (\d+)$/.exec(String((c.arguments as { expression?: unknown }).expression));
      if (m) expect(c.result.output).toBe(String(m[2] === '+' ? +m[1]! + +m[3]! : +m[1]! - +m[3]!));
    }
    // Nothing went through the tool-call stage, and nothing was dead-lettered.
    expect(readdirSync(result.runDir)).not.toContain('dead-letters');
    expect(steps[0]!['finish/error']).toBe(0.5);
  });
});

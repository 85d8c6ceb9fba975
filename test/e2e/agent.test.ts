// Bring your own agent on LocalStack: `toolrl submit` uploads the agent's Python file with the run, the local
// worker's rollout stage (the Lambda entry, functions/rollout) loads it from the run's uploaded inputs into its
// agent host and serves each episode an endpoint the agent reaches with the real `openai` client; episodes go
// straight to the reward stage, whose Python reward reads what the agent reported, and the learner trains 2 steps.
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { keys } from '#shared/topology';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { HANG_MS } from '../helpers/hang.ts';
import { Scenario } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';
import { writeRun } from './support/run-fixture.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'agents');

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

describe('rollout.agent on LocalStack', () => {
  it('runs the uploaded agent in the worker, scores its episodes and trains', async () => {
    // GIVEN the user's folder: the run, its agent (sample 1 of each group throws after one request) and a reward
    // that reads the agent's report
    const worker = s.startWorker('worker0');
    const dir = join(s.dir, 'user');
    mkdirSync(dir, { recursive: true });
    const files = await writeRun(dir, {
      prompts: 2,
      groupSize: 2,
      batchPrompts: 1,
      maxNewTokens: 32,
    });
    for (const f of ['pipeline_agent.py', 'agent_reward.py']) cpSync(join(FIXTURES, f), join(dir, f));
    const config = parseYaml(readFileSync(files.configPath, 'utf8'));
    // No warm start: what is checked is the mechanism, whatever the model writes. No episode ends for the
    // machine's speed: the one bound is the suite's hang guard.
    config.rollout.agent = { path: 'pipeline_agent.py', name: 'run', timeout: HANG_MS / 1000 };
    config.rollout.multi_turn = { max_turns: 3, max_total_response_length: 120 };
    config.tools = { tools: [] };
    config.reward = {
      functions: [
        { name: 'toolcall', weight: 1 },
        { path: 'agent_reward.py', name: 'compute_score', weight: 0 },
      ],
    };
    config.trainer = { ...config.trainer, save_every: 100 };
    writeFileSync(files.configPath, toYaml(config));
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');

    // WHEN it is submitted
    const submit = await s.toolrl(['submit', '--env', s.env, '--config', files.configPath]);
    expect(submit.code, submit.stderr).toBe(0);
    const runId = submit.stdout.trim();

    // THEN the agent went up with the run, and the run completes
    expect(await s.blobs.head(`${keys.inputPrefix(runId)}pipeline_agent.py`)).toBeDefined();
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    const groups = [...(await s.groups(runId)).values()].filter((g) => g.split === 'train');
    expect(groups).toHaveLength(2);
    for (const g of groups) {
      const [ok, failed] = g.trajectories;
      expect(failed!.finishReason).toBe('error');
      expect(failed!.rewardComponents['agent_reward.compute_score/agent_failed']).toBe(1);
      expect(ok!.rewardComponents['agent_reward.compute_score/agent_failed']).toBe(0);
      // One request per turn, and one more that was refused when the episode ended at its token budget.
      const refused = ok!.finishReason === 'max_total_response_length' ? [0, 1] : [0];
      expect(refused.map((r) => ok!.turns.length + r)).toContain(
        ok!.rewardComponents['agent_reward.compute_score/agent_requests'],
      );
      for (const t of g.trajectories)
        expect(t.lossMask.reduce((n: number, m) => n + m, 0)).toBe(
          t.turns.reduce((n, u) => n + (u.tokenEnd - u.tokenStart), 0),
        );
    }
    const metrics = Buffer.from((await s.blobs.get(`${keys.metrics(runId)}metrics.jsonl`))!)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) expect(m['finish/error']).toBe(0.5);
  });
});

// The verl-style tool and compute_score reward of test/fixtures through the commands a user runs: `toolrl tools call`
// (one call is one trajectory: create with --create-kwargs, execute, calc_reward, release) and `toolrl reward score`.
// Each case starts the CLI (and a Python host) as a process: the limits leave room for a loaded machine.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../bench/support/tiny-model.ts';
import { HANG_MS } from '../../helpers/hang.ts';
import { TOOLRL } from '../tools/cli-server.ts';

const toolrl = (...args: string[]) => {
  const r = spawnSync(process.execPath, [TOOLRL, ...args], { encoding: 'utf8', timeout: HANG_MS });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
const fixture = (...p: string[]) => join(REPO_ROOT, 'test', 'fixtures', ...p);

describe('toolrl tools with a Python tool class', () => {
  it('lists its schema and calls it as one trajectory, printing the step reward and calc_reward', () => {
    const tools = fixture('pytools', 'tools.yaml');
    const list = toolrl('tools', 'list', '--tools', tools, '--json');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).map((s: { function: { name: string } }) => s.function.name)).toEqual([
      'calculator',
    ]);

    const call = toolrl(
      'tools',
      'call',
      'calculator',
      '--tools',
      tools,
      '--args',
      '{"expression": "17*23"}',
      '--create-kwargs',
      '{"ground_truth": "391"}',
      '--json',
    );
    expect(call.code).toBe(0);
    expect(JSON.parse(call.stdout)).toEqual({
      ok: true,
      output: '391',
      error: null,
      truncated: false,
      reward: 0,
      metrics: { calls: 1 },
      toolReward: 1,
    });
  });
});

describe('toolrl reward score with a Python compute_score', () => {
  it('scores with a reward config naming the function by path', () => {
    const r = toolrl(
      'reward',
      'score',
      fixture('rewards', 'calc-correct.json'),
      '--config',
      fixture('rewards', 'python-reward.yaml'),
      '--json',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      score: 1.5, // correct (1) + reward_kwargs.bonus (0.5)
      components: { 'verl_reward.compute_score': 1.5, 'verl_reward.compute_score/acc': 1 },
    });
  });

  it('scores the one function with --reward', () => {
    const r = toolrl(
      'reward',
      'score',
      fixture('rewards', 'calc-correct.json'),
      '--reward',
      'compute_score',
      '--config',
      fixture('rewards', 'python-reward.yaml'),
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^score 1\.5\n/);
  });
});

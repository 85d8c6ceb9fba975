// `toolrl reward score` and `toolrl reward list` as a user runs them: the real command in a child process.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HANG_MS } from '../../helpers/hang.ts';
import { fixturePath } from './helpers.ts';

const bin = new URL('../../../bin/toolrl.mjs', import.meta.url).pathname;
const toolrl = (args: string[], input?: string) => {
  const r = spawnSync(process.execPath, [bin, ...args], { input, encoding: 'utf8', timeout: HANG_MS });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('toolrl reward score', () => {
  it('scores a hand-written trajectory with one reward', () => {
    const r = toolrl(['reward', 'score', '--reward', 'toolcall', fixturePath('calc-messy.json'), '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    // Worked out in builtin.test.ts: 0.683333333.
    expect(out.score).toBeCloseTo(0.683333333, 9);
    expect(Object.keys(out.components)).toEqual([
      'correctness',
      'necessity',
      'result_use',
      'final_answer',
      'coherence',
    ]);
  });

  it("takes one reward's config from a file", () => {
    // correctness only: calc-messy's correctness is 2/4 = 0.5
    const r = toolrl([
      'reward',
      'score',
      '--reward',
      'toolcall',
      '--config',
      fixturePath('toolcall-correctness-only.yaml'),
      fixturePath('calc-messy.json'),
      '--json',
    ]);
    expect(JSON.parse(r.stdout).score).toBe(0.5);
  });

  it("scores a pipeline trajectory with a run config's weighted combination and its module", () => {
    // toolcall 1 + 0.5 * brevity 0.95 (21 characters, max 20: 2 - 21/20) = 1.475
    const r = toolrl([
      'reward',
      'score',
      '--config',
      fixturePath('run-reward.yaml'),
      fixturePath('pipeline-trajectory.json'),
      '--json',
    ]);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout);
    expect(out.score).toBeCloseTo(1.475, 12);
    expect(out.components).toMatchObject({ 'toolcall/correctness': 1, brevity: 0.95, 'brevity/chars': 21 });
  });

  it('reads the trajectory from stdin', () => {
    const input = JSON.stringify({ ground_truth: ['Paris'], turns: [{ text: '<answer>paris</answer>' }] });
    const r = toolrl(['reward', 'score', '--reward', 'exact_match', '-', '--json'], input);
    expect(JSON.parse(r.stdout)).toEqual({ score: 1, components: { exact_match: 1, answer_found: 1 } });
  });

  it('exits 2 with a message that names the problem', () => {
    const traj = fixturePath('calc-correct.json');
    expect(toolrl(['reward', 'score', traj])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/give --reward NAME/),
    });
    expect(toolrl(['reward', 'score', '--reward', 'nope', traj])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/unknown reward "nope"; known: bfcl, exact_match, format/),
    });
    expect(toolrl(['reward', 'score', '--reward', 'format', 'missing.json'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/cannot read missing.json/),
    });
    expect(toolrl(['reward', 'score', '--reward', 'format', '-'], '{"turns": [{}]}')).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/- is not a reward input:[\s\S]*turns\[0\]\.text/),
    });
    expect(toolrl(['reward', 'score', '--reward', 'retool', '-'], '{"turns": []}')).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/cannot score -: retool needs a ground truth/),
    });
  });

  it('lists the rewards', () => {
    const r = toolrl(['reward', 'list', '--json']);
    expect(JSON.parse(r.stdout).map((d: { name: string }) => d.name)).toEqual([
      'bfcl',
      'exact_match',
      'format',
      'retool',
      'tool_reward',
      'toolbench',
      'toolcall',
    ]);
  });
});

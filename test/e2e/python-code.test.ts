// A user's verl-style Python tool class and compute_score reward on LocalStack, their files unedited: `toolrl
// submit` uploads the tools file, the module its dotted class_name names (found next to the config) and the reward
// file; the worker's tool-call stage runs the class in its Python tool host, whose interpreter has verl (here the
// stand-in of test/fixtures/pytools/verl, made importable in a venv as `pip install --no-deps verl` would), and
// its reward stage calls compute_score; the learner (a real process, tiny model) trains 2 steps.
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { encodeDataset, readDataset } from '#shared/data/dataset';
import { keys } from '#shared/topology';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { lastSftLoss, memoriseSft, rowDemonstrations } from '../helpers/demonstrations.ts';
import { Scenario } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';
import { learnerLines, writeRun } from './support/run-fixture.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures');

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
});
afterAll(async () => {
  await s?.close();
});

describe('Python tools and rewards on LocalStack', () => {
  it('runs the verl-style tool class in the tool-call stage and compute_score in the reward stage', async () => {
    // GIVEN the user's folder: run.yaml, tools.yaml naming calc_tool.CalcTool, calc_tool.py, verl_reward.py
    // and the tools' Python environment where the worker runs: a venv in which verl is importable (a .pth naming
    // the stand-in stands for `pip install --no-deps verl`), named by TOOLRL_PYTHON. Tools never see the worker's
    // own variables (PYTHONPATH included): the interpreter is their environment.
    const site = join(s.dir, 'site');
    cpSync(join(FIXTURES, 'pytools', 'verl'), join(site, 'verl'), { recursive: true });
    const venv = join(s.dir, 'tools-venv');
    const made = spawnSync('python3', ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    const python = join(venv, 'bin', 'python');
    const purelib = spawnSync(python, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
      encoding: 'utf8',
    }).stdout.trim();
    writeFileSync(join(purelib, 'verl_standin.pth'), `${site}\n`);
    const worker = s.startWorker('worker0', { TOOLRL_PYTHON: python });
    const dir = join(s.dir, 'user');
    for (const f of ['calc_tool.py', 'tools.yaml'])
      cpSync(join(FIXTURES, 'pytools', f), join(dir, f), { recursive: true });
    cpSync(join(FIXTURES, 'rewards', 'verl_reward.py'), join(dir, 'verl_reward.py'));
    const files = await writeRun(dir, { prompts: 2, groupSize: 4, batchPrompts: 1, maxNewTokens: 48 });
    // verl's preprocessing puts the ground truth where the tool's create() reads it
    const rows = (await readDataset(readFileSync(files.datasetPath))).map((r) => ({
      ...r,
      extra_info: {
        ...r.extra_info,
        tools_kwargs: {
          calculator: { create_kwargs: { ground_truth: String(r.reward_model.ground_truth) } },
        },
      },
    }));
    writeFileSync(files.datasetPath, encodeDataset(rows));
    const tools = parseYaml(readFileSync(join(dir, 'tools.yaml'), 'utf8')) as {
      tools: { tool_schema: unknown }[];
    };
    writeFileSync(join(dir, 'sft.jsonl'), rowDemonstrations(rows, tools.tools[0]!.tool_schema));
    const config = parseYaml(readFileSync(files.configPath, 'utf8'));
    config.tools = { config_file: 'tools.yaml' };
    config.reward = {
      functions: [
        { path: 'verl_reward.py', name: 'compute_score', weight: 1 },
        { name: 'tool_reward', weight: 0.5 },
      ],
    };
    config.trainer = {
      ...config.trainer,
      save_every: 100,
      sft: memoriseSft('sft.jsonl'),
    };
    writeFileSync(files.configPath, toYaml(config));
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');

    // WHEN it is submitted
    const submit = await s.toolrl(['submit', '--env', s.env, '--config', files.configPath]);
    expect(submit.code, submit.stderr).toBe(0);
    const runId = submit.stdout.trim();

    // THEN the tool's module went up with the run (the tools environment has only verl), and the run completes
    expect(await s.blobs.head(`${keys.inputPrefix(runId)}calc_tool.py`)).toBeDefined();
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    expect(lastSftLoss(learnerLines(s.dir, runId)), 'the warm start memorised the rows').toBeLessThan(0.02);

    const trajectories = [...(await s.groups(runId)).values()].flatMap((g) => g.trajectories);
    const ran = trajectories.flatMap((t) =>
      t.turns.flatMap((u) => u.toolCalls.filter((c) => c.name === 'calculator' && c.result.ok)),
    );
    expect(ran.length, 'calculator calls that ran').toBeGreaterThan(0);
    for (const c of ran) {
      // execute's (ToolResponse, step reward, metrics), from the class in the worker's tool host
      expect(c.result.output).toMatch(/^-?\d+(\.\d+)?$/);
      expect([0, -0.05]).toContain(c.result.reward);
      expect(c.result.metrics).toEqual({ calls: expect.any(Number) });
    }
    for (const t of trajectories) {
      expect(t.rewardComponents['verl_reward.compute_score/error']).toBe(0);
      expect(t.rewardComponents['verl_reward.compute_score/acc']).toEqual(expect.any(Number));
      const called = t.turns.some((u) => u.toolCalls.some((c) => c.name === 'calculator' && c.result.ok));
      // calc_reward at the trajectory's end reached the reward stage (verl's rollout_reward_scores)
      if (called)
        expect(t.rewardComponents['verl_reward.compute_score/tool_reward']).toBe(
          t.rewardComponents['tool/calculator'],
        );
    }
    const metrics = Buffer.from((await s.blobs.get(`${keys.metrics(runId)}metrics.jsonl`))!)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) expect(m['reward/verl_reward.compute_score']).toEqual(expect.any(Number));
  });
});

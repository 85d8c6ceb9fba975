// The resolver at the edge (shared/config/resolve.ts): one merge rule for a curriculum stage's complete config, on
// every section; the tools file inlined in toolrl's names; run.json's `resolved` written by the run-starter and read
// by the stages by lookup.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { deepMerge } from '#shared/config/merge';
import { ConfigError, loadRunConfig, parseRunConfig, resolveRun } from '#shared/config/resolve';
import { readJson } from '#shared/pipeline/blob-json';
import { RunResources } from '#shared/pipeline/run-resources';
import { startRunFromUpload } from '#shared/pipeline/stages/run-starter';
import { silentLog } from '#shared/ports/log';
import { RunConfigSchema } from '#shared/schemas/config/run';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'toolrl-resolve-'));
  roots.push(d);
  return d;
};

const TWO_STAGES = `
model: {path: tiny}
data: {train: a.parquet}
rollout: {temperature: 1.0, n: 4, multi_turn: {max_total_response_length: 512, max_turns: 3}}
reward: {functions: [{name: toolcall}]}
algorithm: {adv_estimator: dr_grpo}
trainer: {batch_prompts: 2, lr: 1.0e-6}
stages:
  - name: warm
    data: {train: a.parquet}
  - name: hot
    data: {train: b.parquet}
    overrides:
      rollout: {temperature: 0.7, multi_turn: {max_total_response_length: 256}}
      reward: {functions: [{name: exact_match, weight: 2}]}
      algorithm: {clip_ratio_high: 0.3}
      trainer: {lr: 2.0e-6}
`;

describe('one merge rule for a stage (shared/config/merge.ts)', () => {
  it('merges mappings key by key and replaces anything else, lists included', () => {
    expect(deepMerge({ a: { x: 1, y: [1, 2] }, b: 1 }, { a: { y: [3] }, c: 2 })).toEqual({
      a: { x: 1, y: [3] },
      b: 1,
      c: 2,
    });
    expect(deepMerge({ a: 1 }, undefined)).toEqual({ a: 1 });
  });

  it("gives every stage its complete config, each section merged the same way (rollout's too)", () => {
    const config = parseRunConfig(TWO_STAGES, 'run.yaml');
    const { run, stages } = resolveRun(config);
    expect(run).toEqual(config);
    expect(stages.warm).toEqual(config);
    const hot = stages.hot!;
    expect(hot.rollout).toEqual({
      ...config.rollout,
      temperature: 0.7,
      multi_turn: { ...config.rollout.multi_turn, max_total_response_length: 256 },
    });
    expect(hot.reward.functions).toEqual([{ name: 'exact_match', weight: 2, config: {} }]); // a list replaces
    expect(hot.algorithm).toEqual({ ...config.algorithm, clip_ratio_high: 0.3 });
    expect(hot.trainer).toEqual({ ...config.trainer, lr: 2e-6 });
    // complete: every default filled in, as the schema makes it
    expect(RunConfigSchema.parse(hot)).toEqual(hot);
  });

  it('refuses, when the config is read, a stage whose overrides make an invalid config, naming the stage and field', () => {
    const bad = TWO_STAGES.replace('temperature: 0.7', 'temperature: -1');
    expect(() => loadRunConfig(bad, 'run.yaml')).toThrow(ConfigError);
    expect(() => loadRunConfig(bad, 'run.yaml')).toThrow(
      /run\.yaml: stage hot: overrides make an invalid config: rollout\.temperature/,
    );
  });

  it("translates another system's names in a stage's overrides, as at the top level", () => {
    const config = parseRunConfig(
      TWO_STAGES.replace(
        'algorithm: {clip_ratio_high: 0.3}',
        'actor_rollout_ref: {actor: {clip_ratio_high: 0.3, kl_loss_type: low_var_kl}}',
      ),
      'run.yaml',
    );
    expect(resolveRun(config).stages.hot!.algorithm).toMatchObject({
      clip_ratio_high: 0.3,
      kl_loss_type: 'k3',
    });
  });
});

describe('the learning-rate schedule', () => {
  const withTrainer = (trainer: string) =>
    TWO_STAGES.replace('trainer: {batch_prompts: 2, lr: 1.0e-6}', `trainer: ${trainer}`);

  it('takes wsd with its decay steps, for the run and for the warm start', () => {
    const config = parseRunConfig(
      withTrainer(
        '{lr: 3.0e-4, lr_scheduler: wsd, decay_steps: 10, min_lr_ratio: 0.1, sft: {data: d.parquet, lr_scheduler: wsd, decay_steps: 5}}',
      ),
      'run.yaml',
    );
    expect(config.trainer).toMatchObject({ lr_scheduler: 'wsd', decay_steps: 10, min_lr_ratio: 0.1 });
    expect(config.trainer.sft).toMatchObject({ lr_scheduler: 'wsd', decay_steps: 5 });
  });

  it('refuses wsd without decay steps, naming the field and the fix', () => {
    expect(() => parseRunConfig(withTrainer('{lr: 3.0e-4, lr_scheduler: wsd}'), 'run.yaml')).toThrow(
      /set decay_steps \(> 0\)\n {2}→ at trainer\.decay_steps\b/,
    );
    expect(() =>
      parseRunConfig(withTrainer('{sft: {data: d.parquet, lr_scheduler: wsd}}'), 'run.yaml'),
    ).toThrow(/set decay_steps \(> 0\)\n {2}→ at trainer\.sft\.decay_steps/);
  });
});

describe('the tools of a resolved run', () => {
  const VERL_TOOLS = readFileSync(
    new URL('../../fixtures/seeds/verl/sandbox_fusion_tool_config.yaml', import.meta.url),
    'utf8',
  );

  it("inlines the tools file in toolrl's names, code paths made relative to the config's folder", () => {
    const config = parseRunConfig(
      'model: {path: tiny}\ndata: {train: a.parquet}\ntools: {config_file: tools/tools.yaml}\n',
      'run.yaml',
    );
    const files: Record<string, string> = {
      'tools/tools.yaml': `${VERL_TOOLS}\n  - {path: my_tool.py, name: MyTool}\n  - {kind: module, module: ./m.ts}\n`,
    };
    const { run } = resolveRun(config, (f) => files[f]);
    expect(config.tools).toEqual({ config_file: 'tools/tools.yaml' }); // the run config itself as written
    const [sandbox, python, module] = run.tools.tools!;
    expect(sandbox).toMatchObject({ kind: 'code_interpreter', config: { type: 'native' } });
    expect(sandbox).not.toHaveProperty('class_name');
    expect(python).toMatchObject({ path: 'tools/my_tool.py', name: 'MyTool' });
    expect(module).toMatchObject({ kind: 'module', module: 'tools/m.ts' });
    expect(run.tools.config_file).toBeUndefined();
  });

  it('gives a class its implied config under the entry’s own, and a kind its own config keys', () => {
    const config = parseRunConfig(
      `model: {path: tiny}
data: {train: a.parquet}
tools:
  tools:
    - {class_name: mindspeed_rl.tools.retool.ReTool, config: {print_last_expression: false}}
    - {kind: toolbench, config: {toolbench_url: 'http://127.0.0.1:8080', default_category: G1}}
`,
      'run.yaml',
    );
    const [retool, toolbench] = resolveRun(config).run.tools.tools!;
    expect(retool).toEqual({
      kind: 'code_interpreter',
      config: { strip_code_fence: true, print_last_expression: false },
    });
    expect(toolbench!.config).toEqual({ service_url: 'http://127.0.0.1:8080/virtual', category: 'G1' });
    // the run config keeps the entries as written (run.json's `config`)
    expect(config.tools.tools![1]!.config).toEqual({
      toolbench_url: 'http://127.0.0.1:8080',
      default_category: 'G1',
    });
  });

  it('names a tools file that is not with the inputs', () => {
    const config = parseRunConfig(
      'model: {path: tiny}\ndata: {train: a.parquet}\ntools: {config_file: t.yaml}\n',
      'c',
    );
    expect(() => resolveRun(config)).toThrow(
      /tools\.config_file t\.yaml was not found with the run's inputs/,
    );
  });
});

describe("run.json's resolved stages", () => {
  it('are written by the run-starter, the rest of run.json as before, and read by the stages by lookup', async () => {
    const root = tmp();
    const blobs = new FolderBlobStore(root);
    const ctx = {
      blobs,
      queues: {},
      log: silentLog,
      now: () => new Date('2026-01-01T00:00:00Z'),
      learnerJobs: { submit: async (_: RunStatus) => ({ jobId: 'job-1' }) },
    };
    const fixture = new URL('../../fixtures/data/verl-gsm8k.parquet', import.meta.url).pathname;
    const config = `${TWO_STAGES.replace('a.parquet}\nrollout', 'a.parquet}\ntools: {config_file: tools.yaml}\nrollout')}`;
    await blobs.put(keys.config('r1'), config);
    await blobs.put(
      `${keys.inputPrefix('r1')}tools.yaml`,
      readFileSync(new URL('../../fixtures/seeds/verl/search_tool_config.yaml', import.meta.url)),
    );
    for (const name of ['a.parquet', 'b.parquet']) {
      mkdirSync(join(root, keys.inputPrefix('r1')), { recursive: true });
      copyFileSync(fixture, join(root, keys.inputPrefix('r1'), name));
    }
    await startRunFromUpload(ctx, `${keys.inputPrefix('r1')}b.parquet`);
    const run = (await readJson(blobs, keys.runJson('r1'), RunStatusSchema))!.value;
    expect(run.status).toBe('running');
    const resolved = run.resolved!;
    expect(Object.keys(resolved.stages)).toEqual(['warm', 'hot']);
    expect(resolved.stages.hot!.rollout.temperature).toBe(0.7);
    expect(resolved.stages.hot!.rollout.multi_turn.max_total_response_length).toBe(256);
    expect(resolved.run.tools.tools![0]).toMatchObject({ kind: 'search' });
    // the run config recorded as it always was: data paths as keys, the tools file named, not inlined
    expect(run.config!.tools).toEqual({ config_file: 'tools.yaml' });
    expect(run.config!.stages![1]!.data.train).toBe(`${keys.inputPrefix('r1')}b.parquet`);
    expect(resolved.run).toEqual({ ...run.config, tools: resolved.run.tools });

    const resources = new RunResources(blobs, { scratchDir: join(root, '.scratch') });
    const hot = await resources.config('r1', 'hot');
    expect(hot).toEqual(resolved.stages.hot);
    expect(await resources.config('r1', 'hot')).toBe(hot); // a lookup: the same object, parsed once
    await expect(resources.config('r1', 'cold')).rejects.toThrow(/no curriculum stage named cold/);
  });

  it('are resolved once by the stages from a run.json written without them', async () => {
    const root = tmp();
    const blobs = new FolderBlobStore(root);
    const config = parseRunConfig(TWO_STAGES, 'run.yaml');
    const { resolved: _, ...status } = {
      schemaVersion: 1 as const,
      runId: 'old',
      status: 'running' as const,
      reason: null,
      createdAt: '',
      updatedAt: '',
      config,
      resolved: undefined,
      input: { config: keys.config('old'), train: [], val: [] },
      totals: { groupsPlanned: 0, trainPrompts: 0, valPrompts: 0, epochs: 0 },
      learner: { submittedAt: null, jobId: null },
      completedAt: null,
    };
    writeFileSync(join(root, 'x'), ''); // the folder exists
    await blobs.put(keys.runJson('old'), JSON.stringify(status));
    const resources = new RunResources(blobs, { scratchDir: join(root, '.scratch') });
    expect((await resources.config('old', 'hot')).rollout.temperature).toBe(0.7);
    expect(await resources.config('old', null)).toEqual(config);
  });
});

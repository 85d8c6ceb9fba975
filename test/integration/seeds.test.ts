// Each seed project's files as they are train on the embedded default: its config and tool config verbatim
// (test/fixtures/seeds), a few rows in its own data format (test/fixtures/data), and the rest on the command line
// in the seed's own key names, the Hydra way (the model, the data file, and the sizes that make 2 learner steps of
// the tiny model cheap). What the unit tests check piece by piece (aliases, tool class names, foreign rows) is
// checked here as the run a user would start.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDataset } from '#shared/data/dataset';
import { type TrainResult, train } from '#shared/runtime/train';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import type { RunningServer } from '#shared/tools/serve';
import { serveToolBench, ToolBenchCache } from '#shared/tools/toolbench/server';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { scoredGroups, stepMetrics, type TinyRun, tinyRun } from './helpers/tiny-run.ts';

const SEEDS = join(REPO_ROOT, 'test', 'fixtures', 'seeds');
const DATA = join(REPO_ROOT, 'test', 'fixtures', 'data');

const runs: TinyRun[] = [];
let toolbench: RunningServer;
beforeAll(async () => {
  toolbench = await serveToolBench(new ToolBenchCache(join(REPO_ROOT, 'examples', 'toolbench', 'cache')), {
    host: '127.0.0.1',
    port: 0,
  });
});
afterAll(async () => {
  await toolbench?.close();
  for (const r of runs) r.close();
});

interface SeedRun {
  /** Files copied byte for byte into the run folder: destination (as the seed's config names it) -> fixture. */
  readonly files: Record<string, string>;
  /** Datasets written into the run folder: name -> rows. */
  readonly rows?: Record<string, readonly DatasetRow[]>;
  /** The run config's text. */
  readonly config: string;
  readonly overrides: readonly string[];
  /** Prompts per step (data.train_batch_size in the overrides); 1 unless given. */
  readonly prompts?: number;
}

/** Lays the seed's files out as its user has them and trains 2 steps with the command-line overrides. */
async function trainSeed(tag: string, seed: SeedRun): Promise<{ result: TrainResult; status: RunStatus }> {
  const run = tinyRun(`seed-${tag}`);
  runs.push(run);
  for (const [to, from] of Object.entries(seed.files)) {
    mkdirSync(dirname(join(run.dir, to)), { recursive: true });
    copyFileSync(from, join(run.dir, to));
  }
  for (const [name, rows] of Object.entries(seed.rows ?? {})) run.dataset(name, rows);
  const configPath = join(run.dir, 'run.yaml');
  writeFileSync(configPath, seed.config);
  const result = await train({
    configPath,
    workdir: join(run.dir, 'work'),
    ortThreads: 1,
    maxSteps: 2,
    overrides: seed.overrides,
  });
  expect(result.status, result.reason ?? '').toBe('completed');
  const status = RunStatusSchema.parse(JSON.parse(readFileSync(join(result.runDir, 'run.json'), 'utf8')));
  // 2 steps of `prompts` prompts and 2 samples each, each trajectory scored by the seed's reward
  const perStep = 2 * (seed.prompts ?? 1);
  expect(stepMetrics(result).map((s) => [s.step, s.trajectories])).toEqual([
    [1, perStep],
    [2, perStep],
  ]);
  const reward = status.config!.reward.functions[0]!.name;
  for (const g of scoredGroups(result).values())
    for (const t of g.trajectories) expect(t.rewardComponents[reward], reward).toEqual(expect.any(Number));
  return { result, status };
}

const seedFile = (...p: string[]) => join(SEEDS, ...p);
const seedText = (...p: string[]) => readFileSync(seedFile(...p), 'utf8');

describe('seed projects train 2 steps on the embedded default, their files as they are', () => {
  it('MindSpeed-RL ReTool: dapo_qwen25_7b_A2_multi_turn.yaml and retool_config.yaml verbatim, DAPO-math rows', async () => {
    const { status } = await trainSeed('mindspeed', {
      // configs/ as in the MindSpeed-RL repository: the run config names ./configs/tools/retool_config.yaml
      files: {
        'configs/tools/retool_config.yaml': seedFile('mindspeed-rl', 'retool_config.yaml'),
        'dapo.parquet': join(DATA, 'dapo-math-retool.parquet'),
      },
      config: seedText('mindspeed-rl', 'dapo_qwen25_7b_A2_multi_turn.yaml'),
      overrides: [
        'model.path=tiny',
        'model.dtype=fp32',
        'data.train=dapo.parquet',
        'rl_config.n_samples_per_prompt=2',
        'megatron_training.global_batch_size=1',
        'generate_config.sampling_config.max_tokens=16',
        'rl_config.max_total_response_length=32',
        'rl_config.use_tensorboard=false',
      ],
    });
    const c = status.config!;
    // the overrides won over the file, under their MindSpeed-RL names
    expect(c.rollout.n).toBe(2);
    expect(c.rollout.max_new_tokens).toBe(16);
    expect(c.trainer.batch_prompts).toBe(1);
    // rl_config's verifier and multi-turn block, the ReTool class as the code interpreter
    expect(c.reward.functions).toEqual([expect.objectContaining({ name: 'retool', weight: 1 })]);
    expect(c.tools.config_file).toBe('./configs/tools/retool_config.yaml');
    expect(c.rollout.multi_turn).toMatchObject({ max_tool_calls: 1, tool_response_truncate_side: 'middle' });
    expect(c.algorithm).toMatchObject({ adv_estimator: 'grpo', clip_ratio_low: 0.2, clip_ratio_high: 0.28 });
    // actor_config's optimizer settings (its AdamW beta2 is Megatron's 0.95, not the 0.999 default)
    expect(c.trainer).toMatchObject({ lr: 1e-6, weight_decay: 0.01, adam_beta1: 0.9, adam_beta2: 0.95 });
  });

  it("verl: its rollout multi_turn block and sandbox_fusion_tool_config.yaml verbatim, GSM8K rows, verl's overrides", async () => {
    // verl's multi_turn block sits under actor_rollout_ref.rollout in a verl config; the rest is the command line
    // of verl's examples/sglang_multiturn scripts.
    const block = seedText('verl', 'rollout-multi_turn.yaml')
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n');
    const { status } = await trainSeed('verl', {
      files: {
        'sandbox_fusion_tool_config.yaml': seedFile('verl', 'sandbox_fusion_tool_config.yaml'),
        'gsm8k.parquet': join(DATA, 'verl-gsm8k.parquet'),
      },
      config: `actor_rollout_ref:\n  rollout:\n${block}\n`,
      overrides: [
        'actor_rollout_ref.model.path=tiny',
        'data.train_files=gsm8k.parquet',
        'data.train_batch_size=1',
        'data.max_response_length=32',
        'actor_rollout_ref.rollout.n=2',
        'actor_rollout_ref.rollout.multi_turn.enable=True',
        'actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2',
        'actor_rollout_ref.rollout.multi_turn.tool_config_path=sandbox_fusion_tool_config.yaml',
        'model.dtype=fp32',
        // every group trains however the random model scores (toolrl drops all-equal groups by default)
        'algorithm.filter_groups=false',
      ],
    });
    const c = status.config!;
    expect(c.rollout.n).toBe(2);
    expect(c.rollout.multi_turn).toMatchObject({
      max_turns: 2,
      max_parallel_calls: 1,
      max_tool_response_length: 256,
      tool_response_truncate_side: 'middle',
      tool_parser_format: 'hermes',
    });
    expect(c.tools.config_file).toBe('sandbox_fusion_tool_config.yaml');
  });

  it('EnvTuning: multi_turn_fc_grpo_stage1.yaml verbatim, BFCL rows in the form EnvTuning ships them, its script overrides', async () => {
    // EnvTuning's rows list every function of the row's classes in the system prompt (~20k characters, 17k of the
    // tiny model's tokens: a learner step of minutes on CPU). Here each lists only the functions its ground truth
    // calls; every other field is the row as shipped.
    const rows = (await readDataset(join(DATA, 'envtuning-bfcl.parquet'))).map((row) => {
      const used = new Set(
        (row.reward_model.ground_truth as string[][]).flat().map((call) => call.slice(0, call.indexOf('('))),
      );
      const [system, ...rest] = row.prompt;
      const m = /^([\s\S]*?invoke\.\n)(\[.*\])$/s.exec(system!.content);
      expect(m, 'the function list of the system prompt').not.toBeNull();
      const functions = (JSON.parse(m![2]!) as { name: string }[]).filter((f) => used.has(f.name));
      expect(functions.length).toBeGreaterThan(0);
      return { ...row, prompt: [{ ...system!, content: m![1] + JSON.stringify(functions) }, ...rest] };
    });
    const { status } = await trainSeed('envtuning', {
      files: {},
      rows: { 'bfcl_train_base.parquet': rows },
      config: seedText('envtuning', 'multi_turn_fc_grpo_stage1.yaml'),
      // scripts/run_multi_turn_fc_grpo_stage1.sh's lines, sizes cut
      overrides: [
        'algorithm.adv_estimator=grpo',
        'data.train_batch_size=1',
        'data.train_files=bfcl_train_base.parquet',
        'data.max_response_length=32',
        'actor_rollout_ref.model.path=tiny',
        'actor_rollout_ref.rollout.n=2',
        'actor_rollout_ref.rollout.multi_turn.max_turns=2',
        'trainer.total_epochs=1',
        'model.dtype=fp32',
        // every group trains however the random model scores (toolrl drops all-equal groups by default)
        'algorithm.filter_groups=false',
      ],
    });
    const c = status.config!;
    expect(c.rollout.n).toBe(2);
    expect(c.algorithm).toMatchObject({ kl_loss_type: 'k3', kl_loss_coef: 0.1, clip_ratio_c: 10 });
    expect(c.rollout.multi_turn.tool_parser_format).toBe('hermes');
  });

  it('the ToolBench seed: grpo_toolbench_trainer.yaml verbatim, rows from its converter, its grpo.sh overrides', async () => {
    const rows = await readDataset(join(DATA, 'toolbench-seed.parquet'));
    expect(rows.length).toBeGreaterThan(0);
    const { status } = await trainSeed('toolbench', {
      files: { 'train.parquet': join(DATA, 'toolbench-seed.parquet') },
      config: seedText('toolbench-seed', 'grpo_toolbench_trainer.yaml'),
      overrides: [
        'data.train_files=train.parquet',
        '~data.val_files',
        'data.train_batch_size=1',
        'data.max_response_length=32',
        'actor_rollout_ref.model.path=tiny',
        'actor_rollout_ref.model.enable_gradient_checkpointing=false',
        'actor_rollout_ref.rollout.n_agent=2',
        'max_turns=2',
        `toolbench_url=${toolbench.url}`,
        'model.dtype=fp32',
        // every group trains however the random model scores (toolrl drops all-equal groups by default)
        'algorithm.filter_groups=false',
      ],
    });
    const c = status.config!;
    expect(c.rollout.n).toBe(2);
    expect(c.tools.tools).toEqual([
      expect.objectContaining({ kind: 'toolbench', config: { toolbench_url: toolbench.url } }),
    ]);
  });

  it("the ToolBench seed's first converter: its output from ToolLLaMA conversations (role `function` messages) as it is", async () => {
    // Written by the seed's own scripts/convert_toolbench_to_verl.py (test/fixtures/seeds/README.md)
    const file = join(SEEDS, 'toolbench-seed', 'converter-output', 'toolllama.parquet');
    const rows = await readDataset(file);
    expect(rows.map((r) => r.prompt.at(-1)!.role)).toEqual(['user', 'tool', 'user']);
    const { result } = await trainSeed('toolbench-toolllama', {
      files: { 'train.parquet': file },
      config: seedText('toolbench-seed', 'grpo_toolbench_trainer.yaml'),
      prompts: 3,
      overrides: [
        'data.train_files=train.parquet',
        '~data.val_files',
        'data.train_batch_size=3',
        'data.max_response_length=32',
        'actor_rollout_ref.model.path=tiny',
        'actor_rollout_ref.model.enable_gradient_checkpointing=false',
        'actor_rollout_ref.rollout.n_agent=2',
        'max_turns=2',
        `toolbench_url=${toolbench.url}`,
        'model.dtype=fp32',
        'algorithm.filter_groups=false',
      ],
    });
    // every row trained in each step, the one whose prompt ends with the seed's function message included
    const prompts = [...scoredGroups(result).values()].map((g) => g.promptId);
    expect(new Set(prompts)).toEqual(new Set(rows.map((r) => `p${r.extra_info.index}`)));
  });
});

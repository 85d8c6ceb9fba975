// Run configs written with verl's, MindSpeed-RL's and the seeds' names load as toolrl configs: the seeds' own
// files (test/fixtures/seeds, quoted verbatim) with only a model and a data file added, and the Hydra override
// lines of their run scripts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import {
  PARSER_ALIASES,
  PROMPT_TYPE_ALIASES,
  REWARD_ALIASES,
  TOOL_CLASS_ALIASES,
  VALUE_ALIASES,
} from '#shared/config/aliases';
import { applyConfigAliases } from '#shared/config/apply-aliases';
import { KEY_ALIASES } from '#shared/config/key-aliases';
import { applyOverrides, parseOverride } from '#shared/config/overrides';
import { ConfigError, loadRunConfig } from '#shared/config/resolve';

const seed = (path: string): string =>
  readFileSync(new URL(`../../fixtures/seeds/${path}`, import.meta.url), 'utf8');

/** What a user adds to a seed's file: a model and a data file. */
const MINIMAL = 'model: {path: tiny}\ndata: {train: train.parquet}\n';

describe('MindSpeed-RL: the ReTool run config as shipped', () => {
  // configs/dapo_qwen25_7b_A2_multi_turn.yaml verbatim, plus a model and data.
  const loaded = loadRunConfig(
    `${seed('mindspeed-rl/dapo_qwen25_7b_A2_multi_turn.yaml')}\n${MINIMAL}`,
    'dapo.yaml',
  );
  const c = loaded.config;

  it('reads rl_config: verifier, multi-turn block, tool config path', () => {
    expect(c.reward.functions).toEqual([{ name: 'retool', weight: 1, config: {} }]);
    expect(c.tools.config_file).toBe('./configs/tools/retool_config.yaml');
    expect(c.rollout.multi_turn).toMatchObject({
      max_tool_calls: 1,
      max_parallel_calls: 1,
      max_total_response_length: 2048,
      max_tool_response_length: 256,
      tool_response_truncate_side: 'middle',
      tool_parser_format: 'hermes',
    });
    expect(c.rollout.n).toBe(8);
    expect(c.data.max_prompt_length).toBe(2048);
  });

  it('reads its algorithm: group_norm is grpo, clip-higher 0.2/0.28, token-level loss', () => {
    expect(c.algorithm).toMatchObject({
      adv_estimator: 'grpo',
      clip_ratio_low: 0.2,
      clip_ratio_high: 0.28,
      loss_agg_mode: 'token-mean',
      entropy_coeff: 0,
      gamma: 1,
      lam: 0.95,
      filter_groups: false,
    });
  });

  it('reads the optimiser, batch and sampling keys of its other sections', () => {
    expect(c.trainer).toMatchObject({
      lr: 1e-6,
      weight_decay: 0.01,
      grad_clip: 1,
      batch_prompts: 32,
      max_steps: 1000,
      save_every: 100,
    });
    expect(c.rollout).toMatchObject({ temperature: 1, top_p: 1, top_k: 0, max_new_tokens: 2048 });
    expect(c.logging.tensorboard).toBe(true);
  });

  it('accepts async_engine, multi_turn_enable and the Ray/Megatron keys with a one-line notice each', () => {
    expect(loaded.notices).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^rl_config\.multi_turn_enable \(MindSpeed-RL\) has no meaning here.*always on/,
        ),
        expect.stringMatching(/^rl_config\.async_engine \(MindSpeed-RL\) has no meaning here.*asynchronous/),
        expect.stringMatching(
          /^MindSpeed-RL settings with no counterpart here are ignored: .*megatron_training\.use_flash_attn/,
        ),
      ]),
    );
    for (const n of loaded.notices) expect(n).not.toContain('\n');
  });
});

describe("verl's multi_turn block", () => {
  it('loads under rollout: as written, defaults (null) left to toolrl', () => {
    const block = parseYaml(seed('verl/rollout-multi_turn.yaml')) as Record<string, unknown>;
    const text = `${MINIMAL}${stringify({ rollout: block })}`;
    const { config, notices } = loadRunConfig(text, 'run.yaml');
    expect(config.rollout.multi_turn).toMatchObject({
      max_parallel_calls: 1,
      max_tool_response_length: 256,
      tool_response_truncate_side: 'middle',
      tool_parser_format: 'hermes',
      max_turns: 4, // max_assistant_turns: null -> toolrl's default
    });
    expect(config.tools.config_file).toBeUndefined(); // tool_config_path: null
    expect(notices.join('\n')).toMatch(/rollout\.multi_turn\.enable \(verl\)/);
    expect(notices.join('\n')).toMatch(/use_inference_chat_template/);
  });

  it("maps max_assistant_turns, format and tool_config_path, through verl's full paths too", () => {
    const { config } = loadRunConfig(
      `${MINIMAL}actor_rollout_ref:\n  rollout:\n    n: 5\n    multi_turn:\n      enable: true\n      max_assistant_turns: 3\n      format: qwen\n      tool_config_path: tools.yaml\n`,
      'run.yaml',
    );
    expect(config.rollout.multi_turn.max_turns).toBe(3);
    expect(config.rollout.multi_turn.tool_parser_format).toBe('hermes'); // EnvTuning's `qwen`
    expect(config.tools.config_file).toBe('tools.yaml');
    expect(config.rollout.n).toBe(5);
  });
});

describe("verl's DAPO recipe: algorithm.filter_groups as a block", () => {
  it('takes enable as the switch and max_num_gen_batches as the bound, notes metric, in the file and as overrides', () => {
    const block = (enable: string) =>
      `${MINIMAL}algorithm:\n  filter_groups:\n    enable: ${enable}\n    metric: acc\n    max_num_gen_batches: 7\n`;
    const on = loadRunConfig(block('True'), 'dapo.yaml');
    expect(on.config.algorithm.filter_groups).toBe(true);
    expect(on.config.algorithm.max_num_gen_batches).toBe(7);
    expect(on.notices.join('\n')).toMatch(/algorithm\.filter_groups\.metric \(verl\)/);
    expect(loadRunConfig(block('False'), 'dapo.yaml').config.algorithm.filter_groups).toBe(false);
    const raw = parseYaml(MINIMAL) as Record<string, unknown>;
    const { config } = applyOverrides(raw, ['algorithm.filter_groups.enable=false']);
    expect(loadRunConfig(stringify(config), 'run.yaml').config.algorithm.filter_groups).toBe(false);
  });
});

describe('EnvTuning: stage 1 config and its run script overrides', () => {
  // scripts/run_multi_turn_fc_grpo_stage1.sh, its override lines that name toolrl settings (verbatim)
  const overrides = [
    'algorithm.adv_estimator=grpo',
    'data.train_batch_size=16',
    'data.filter_overlong_prompts=False',
    "data.truncation='error'",
    'data.return_raw_chat=True',
    'data.train_files=bfcl_train_base.parquet',
    'data.val_files=bfcl_val.parquet',
    'actor_rollout_ref.model.path=tiny',
    'actor_rollout_ref.model.enable_gradient_checkpointing=True',
    'actor_rollout_ref.rollout.n=16',
    'actor_rollout_ref.rollout.gpu_memory_utilization=0.8',
    "trainer.logger=['console','tensorboard']",
    'trainer.n_gpus_per_node=8',
    'trainer.save_freq=5',
    'trainer.test_freq=1',
    'trainer.total_epochs=20',
  ];
  const { config, notices } = loadRunConfig(
    seed('envtuning/multi_turn_fc_grpo_stage1.yaml'),
    'stage1.yaml',
    overrides,
  );

  it('reads the actor and algorithm blocks: KL low_var_kl is k3, kl penalty kl is k1, dual clip 10', () => {
    expect(config.algorithm).toMatchObject({
      use_kl_loss: true,
      kl_loss_coef: 0.1,
      kl_loss_type: 'k3',
      clip_ratio_low: 0.2,
      clip_ratio_high: 0.28,
      clip_ratio_c: 10,
      entropy_coeff: 0.001,
      loss_agg_mode: 'seq-mean-token-mean',
      kl_penalty: 'k1',
      kl_coef: 0,
      cliprange_value: 0.5,
    });
    expect(config.trainer).toMatchObject({
      lr: 1e-6,
      grad_clip: 1,
      batch_prompts: 16,
      epochs: 20,
      save_every: 5,
      eval_every: 1,
    });
  });

  it('reads the data and rollout keys and the overrides', () => {
    expect(config.data).toMatchObject({
      train: 'bfcl_train_base.parquet',
      val: 'bfcl_val.parquet',
      max_prompt_length: 8192,
    });
    expect(config.rollout.multi_turn).toMatchObject({
      max_turns: 100,
      tool_parser_format: 'hermes',
      max_total_response_length: 10000,
    });
    expect(config.rollout.n).toBe(16);
    expect(config.model).toMatchObject({ path: 'tiny', gradient_checkpointing: true });
  });

  it('notes what has no counterpart (interaction config, SGLang, Ray, logger)', () => {
    const all = notices.join('\n');
    expect(all).toMatch(/interaction_config_path \(verl\)/);
    expect(all).toMatch(/actor_rollout_ref\.rollout\.name/);
    expect(all).toMatch(/actor_rollout_ref\.rollout\.gpu_memory_utilization/);
    expect(all).toMatch(/trainer\.n_gpus_per_node \(verl\)/);
  });
});

describe('the ToolBench seed: trainer config and scripts/grpo.sh overrides', () => {
  const overrides = [
    'data.train_files=train.parquet',
    'data.val_files=val.parquet',
    'data.val_batch_size=2',
    'actor_rollout_ref.model.path=tiny',
    'actor_rollout_ref.actor.optim.lr=1e-6',
    'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0',
    'actor_rollout_ref.actor.use_kl_loss=true',
    'actor_rollout_ref.actor.kl_loss_coef=0.001',
    'actor_rollout_ref.actor.kl_loss_type=low_var_kl',
    'actor_rollout_ref.rollout.n_agent=4',
    'toolbench_url=http://127.0.0.1:12345',
    'reward_model.reward_server_url=http://localhost:12346/evaluate_batch',
    'algorithm.adv_estimator=grpo',
    'trainer.experiment_name=Sports',
    'trainer.project_name=toolbench_grpo',
    '+trainer.val_before_train=true',
    'trainer.test_freq=10',
    'trainer.total_epochs=10',
    'trainer.save_freq=25',
  ];
  const { config, notices } = loadRunConfig(
    seed('toolbench-seed/grpo_toolbench_trainer.yaml'),
    'grpo.yaml',
    overrides,
  );

  it('n_agent is the group size (over verl n: 1), toolbench_url the toolbench tool at /virtual', () => {
    expect(config.rollout.n).toBe(4);
    expect(config.tools.tools).toEqual([
      { kind: 'toolbench', config: { toolbench_url: 'http://127.0.0.1:12345' } },
    ]);
    expect(config.name).toBe('Sports');
    expect(config.rollout.multi_turn).toMatchObject({
      max_turns: 5,
      max_tool_response_length: 2000,
      tool_response_truncate_unit: 'tokens', // Search-R1's max_obs_length counts tokens
      max_total_response_length: 1024,
    });
    expect(config.algorithm).toMatchObject({
      kl_loss_type: 'k3',
      kl_loss_coef: 0.001,
      use_kl_loss: true,
      entropy_coeff: 0.001,
    });
    expect(config.trainer).toMatchObject({
      lr: 1e-6,
      epochs: 10,
      save_every: 25,
      eval_every: 10,
      batch_prompts: 64,
    });
    expect(notices.join('\n')).toMatch(/reward_model\.reward_server_url \(verl\) has no counterpart/);
  });
});

describe('conflicts and unknown keys', () => {
  it('two names for one setting are an error naming both', () => {
    expect(() => loadRunConfig(`${MINIMAL}rollout: {n: 4, n_agent: 5}\n`, 'run.yaml')).toThrow(
      /rollout\.n and rollout\.n_agent both set rollout\.n/,
    );
    expect(() =>
      loadRunConfig(`model: {path: tiny}\ndata: {train: a.parquet, train_files: b.parquet}\n`, 'run.yaml'),
    ).toThrow(ConfigError);
  });

  it('a typo in a toolrl section is still refused by name', () => {
    expect(() => loadRunConfig(`${MINIMAL}trainer: {lrr: 1}\n`, 'run.yaml')).toThrow(/lrr/);
  });

  it('verifier_function and verifier_weight must pair up', () => {
    expect(() =>
      loadRunConfig(
        `${MINIMAL}reward: {verifier_function: [retool_reward, format], verifier_weight: [1.0]}\n`,
        'run.yaml',
      ),
    ).toThrow(/2 verifier_function\(s\) but 1 verifier_weight/);
    const { config } = loadRunConfig(
      `${MINIMAL}reward: {verifier_function: [retool_reward, format_reward], verifier_weight: [1.0, 0.5]}\n`,
      'run.yaml',
    );
    expect(config.reward.functions.map((f) => [f.name, f.weight])).toEqual([
      ['retool', 1],
      ['format', 0.5],
    ]);
  });

  it('renames inside curriculum stages too', () => {
    const { config } = loadRunConfig(
      `${MINIMAL}stages:\n  - name: a\n    data: {train_files: a.parquet, prompt_type: qwen_search_tool}\n    overrides: {actor_rollout_ref: {actor: {kl_loss_type: low_var_kl}}}\n`,
      'run.yaml',
    );
    expect(config.stages?.[0]?.data).toMatchObject({ train: 'a.parquet', prompt_type: 'search' });
    expect(config.stages?.[0]?.overrides).toEqual({ algorithm: { kl_loss_type: 'k3' } });
  });

  it('the alias pass is idempotent on a toolrl config', () => {
    const once = applyConfigAliases(
      parseYaml(`${MINIMAL}rollout: {n: 3}\nreward: {functions: [{name: toolcall}]}`),
    );
    expect(applyConfigAliases(once.config).config).toEqual(once.config);
  });
});

describe('Hydra-style overrides', () => {
  const base = applyConfigAliases(parseYaml(MINIMAL)).config;

  it('are typed by the schema', () => {
    const { config } = loadRunConfig(MINIMAL, 'run.yaml', [
      'trainer.lr=1e-6',
      'rollout.n=5',
      'algorithm.adv_estimator=grpo',
      'name=2024', // a string where the schema wants one
      'data.train=[a.parquet,b.parquet]',
      'algorithm.clip_ratio_c=null',
    ]);
    expect(config.trainer.lr).toBe(1e-6);
    expect(config.rollout.n).toBe(5);
    expect(config.name).toBe('2024');
    expect(config.data.train).toEqual(['a.parquet', 'b.parquet']);
    expect(config.algorithm.clip_ratio_c).toBeNull();
  });

  it('refuse unknown keys by name, with a suggestion and the keys that exist there', () => {
    expect(() => parseOverride('trainer.lrr=1e-6')).toThrow(
      /unknown key trainer\.lrr \(did you mean trainer\.lr\?\); trainer has batch_prompts, lr,/,
    );
    expect(() => parseOverride('traner.lr=1')).toThrow(/unknown key traner\.lr \(did you mean trainer\?\)/);
    expect(() => parseOverride('rollout.multi_turn.max_turn=3')).toThrow(
      /did you mean rollout\.multi_turn\.max_turns/,
    );
  });

  it('refuse a value of the wrong type with the path', () => {
    expect(() => loadRunConfig(MINIMAL, 'run.yaml', ['rollout.n=five'])).toThrow(
      /with the command-line overrides[\s\S]*rollout\.n/,
    );
  });

  it('add (+), remove (~), open records, and not-key=value text', () => {
    const { config } = applyOverrides(base, ['+trainer.max_steps=3', '~data.train']);
    expect(config).toMatchObject({ trainer: { max_steps: 3 } });
    expect((config.data as Record<string, unknown>).train).toBeUndefined();
    expect(
      applyOverrides(base, ['reward.functions=[{name: toolcall, config: {need_tool: false}}]']).config.reward,
    ).toEqual({
      functions: [{ name: 'toolcall', config: { need_tool: false } }],
    });
    expect(() => parseOverride('trainer.lr')).toThrow(/has no value/);
    expect(() => parseOverride('--lr 1')).toThrow(/is not key=value/);
  });

  it('accept a key with no meaning here with a notice', () => {
    const { notices } = loadRunConfig(MINIMAL, 'run.yaml', ['rollout.multi_turn.enable=true']);
    expect(notices).toEqual([expect.stringMatching(/^rollout\.multi_turn\.enable \(verl\).*always on/)]);
  });
});

describe('the alias table', () => {
  it('every alias lands on a path the schema has, once', () => {
    for (const a of KEY_ALIASES) {
      const targets = a.to === null ? [] : typeof a.to === 'string' ? [a.to] : a.to;
      for (const t of targets)
        expect(() => parseOverride(`${t}=null`), `${a.from} -> ${t}`).not.toThrow(/unknown key/);
    }
    const froms = KEY_ALIASES.map((a) => a.from);
    expect(new Set(froms).size).toBe(froms.length);
    expect(new Set(TOOL_CLASS_ALIASES.map((a) => a.from)).size).toBe(TOOL_CLASS_ALIASES.length);
  });

  it('docs/coming-from.md (the README links it) lists every name of the table', () => {
    const readme = readFileSync(new URL('../../../docs/coming-from.md', import.meta.url), 'utf8');
    const names = [
      ...KEY_ALIASES.map((a) => a.from),
      ...VALUE_ALIASES.map((a) => String(a.from)),
      ...TOOL_CLASS_ALIASES.map((a) => a.from),
      ...REWARD_ALIASES.map((a) => a.from),
      ...PROMPT_TYPE_ALIASES.map((a) => a.from),
      ...PARSER_ALIASES.map((a) => a.from),
    ];
    const missing = [...new Set(names)].filter(
      (n) => !readme.includes(`\`${n}\``) && !readme.includes(n.split('.').pop()!),
    );
    expect(missing).toEqual([]);
  });
});

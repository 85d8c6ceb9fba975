// The run-config keys of verl, MindSpeed-RL and the seed projects that toolrl spells another way, and where each
// lands: the largest part of the alias table (aliases.ts holds the rest and the types). Only the resolver reads it.

import type { KeyAlias } from './aliases.ts';

const MULTI_TURN = 'rollout.multi_turn';
/** Places a MindSpeed-RL `rl_config` key may land when its block is pasted: the top level, `rollout:`, `multi_turn:`. */
const RL_CONFIG_PLACES = ['', 'rollout.', `${MULTI_TURN}.`];
const at = (places: readonly string[], key: string) => places.map((p) => `${p}${key}`);

const ALWAYS_MULTI_TURN = 'multi-turn tool use is always on here';

function keyAliases(): KeyAlias[] {
  const out: KeyAlias[] = [];
  const add = (from: string | string[], rest: Omit<KeyAlias, 'from'>) => {
    for (const f of Array.isArray(from) ? from : [from]) out.push({ from: f, ...rest });
  };
  // verl's multi_turn block (actor_rollout_ref.rollout.multi_turn; see the prefix below)
  add(`${MULTI_TURN}.enable`, { to: null, origin: 'verl', note: ALWAYS_MULTI_TURN });
  add(`${MULTI_TURN}.max_assistant_turns`, { to: `${MULTI_TURN}.max_turns`, origin: 'verl' });
  add(`${MULTI_TURN}.format`, { to: `${MULTI_TURN}.tool_parser_format`, origin: 'verl' });
  add(`${MULTI_TURN}.max_user_turns`, {
    to: null,
    origin: 'verl',
    note: 'user turns come from the data (a BFCL row feeds its next question when the model answers); max_turns bounds the episode',
  });
  add(`${MULTI_TURN}.interaction_config_path`, {
    to: null,
    origin: 'verl',
    note: "interactions have no config file here: BFCL's environment and user turns are the `bfcl` tool kind",
  });
  add(`${MULTI_TURN}.use_inference_chat_template`, {
    to: null,
    origin: 'verl',
    note: 'the rollout always appends the exact sampled tokens; the chat template renders prompts and tool results',
  });
  add(`${MULTI_TURN}.tokenization_sanity_check_mode`, {
    to: null,
    origin: 'verl',
    note: 'every turn is checked against a fresh render of the conversation (finish/error counts mismatches)',
  });
  // MindSpeed-RL's rl_config multi-turn keys, wherever the pasted block lands
  add(at(RL_CONFIG_PLACES, 'multi_turn_enable'), {
    to: null,
    origin: 'MindSpeed-RL',
    note: ALWAYS_MULTI_TURN,
  });
  add(at(RL_CONFIG_PLACES, 'async_engine'), {
    to: null,
    origin: 'MindSpeed-RL',
    note: 'rollouts are always asynchronous here (bounded by trainer.max_staleness)',
  });
  add(at(RL_CONFIG_PLACES, 'tool_config_path'), { to: 'tools.config_file', origin: 'MindSpeed-RL' });
  for (const key of [
    'max_tool_calls',
    'max_parallel_calls',
    'max_total_response_length',
    'max_tool_response_length',
    'tool_response_truncate_side',
    'tool_parser_format',
  ])
    add(at(['', 'rollout.'], key), { to: `${MULTI_TURN}.${key}`, origin: 'MindSpeed-RL' });
  add(at(['', 'rollout.'], 'n_samples_per_prompt'), { to: 'rollout.n', origin: 'MindSpeed-RL' });
  add(['verifier_function', 'reward.verifier_function'], {
    to: 'reward.functions',
    origin: 'MindSpeed-RL',
    note: 'with verifier_weight beside it: [{name, weight}] per verifier (retool_reward is `retool`)',
  });
  // MindSpeed-RL's algorithm keys, at the top of its rl_config block
  for (const key of [
    'adv_estimator',
    'gamma',
    'lam',
    'entropy_coeff',
    'clip_ratio_low',
    'clip_ratio_high',
    'use_kl_in_reward',
    'kl_penalty',
  ])
    add(key, { to: `algorithm.${key}`, origin: 'MindSpeed-RL' });
  add('max_prompt_length', { to: 'data.max_prompt_length', origin: 'MindSpeed-RL' });
  add('use_tensorboard', { to: 'logging.tensorboard', origin: 'MindSpeed-RL' });
  add(['overlong_buffer_enable', 'overlong_buffer', 'overlong_buffer_penalty_factor', 'rollout_max_tokens'], {
    to: null,
    origin: 'MindSpeed-RL',
    note: "DAPO's overlong penalty is not implemented; responses stop at max_total_response_length",
  });
  add('filter_groups_max_batches', { to: 'algorithm.max_num_gen_batches', origin: 'MindSpeed-RL' });
  add(['filter_groups_metric', 'filter_groups_train_batch_size'], {
    to: null,
    origin: 'MindSpeed-RL',
    note: 'filter_groups drops groups whose rewards are all equal; refill_filtered_groups keeps reading until the batch is full',
  });
  add(['rule_reward', 'reward.rule_reward'], {
    to: null,
    origin: 'MindSpeed-RL',
    note: 'rewards are rule (function) rewards here; a reward model is not supported',
  });
  add(['algorithm.clip_ratio', 'clip_ratio'], {
    to: ['algorithm.clip_ratio_low', 'algorithm.clip_ratio_high'],
    origin: 'MindSpeed-RL',
    note: 'sets both bounds; clip_ratio_low/high beside it win',
  });
  add(['algorithm.clip_higher_enable', 'clip_higher_enable'], {
    to: null,
    origin: 'MindSpeed-RL',
    note: 'clip-higher is on whenever clip_ratio_high differs from clip_ratio_low',
  });
  add(['algorithm.token_level_loss', 'token_level_loss'], {
    to: 'algorithm.loss_agg_mode',
    origin: 'MindSpeed-RL',
    value: (v) => (v === true ? 'token-mean' : v === false ? 'seq-mean-token-mean' : v),
  });
  add(['algorithm.filter_groups_enable', 'filter_groups_enable'], {
    to: 'algorithm.filter_groups',
    origin: 'MindSpeed-RL',
  });
  // verl's DAPO recipe nests the switch: algorithm.filter_groups: {enable, metric, max_num_gen_batches}.
  add('algorithm.filter_groups.enable', { to: 'algorithm.filter_groups', origin: 'verl' });
  add('algorithm.filter_groups.max_num_gen_batches', { to: 'algorithm.max_num_gen_batches', origin: 'verl' });
  add('algorithm.filter_groups.metric', {
    to: null,
    origin: 'verl',
    note: 'filter_groups drops groups whose rewards (the trajectory score) are all equal; refill_filtered_groups keeps reading until the batch is full',
  });
  add(['algorithm.advantage_whiten'], {
    to: null,
    origin: 'MindSpeed-RL',
    note: 'advantages follow adv_estimator (grpo normalises by the group std; set norm_adv_by_std_in_grpo)',
  });
  add(['guarantee_order', 'use_integrated_worker', 'blocking', 'num_cpus_for_local_task'], {
    to: null,
    origin: 'MindSpeed-RL',
    note: 'Ray scheduling has no counterpart: stages are queue consumers',
  });
  // Search-R1 and the ToolBench seed (verl forks)
  add(['rollout.n_agent', 'actor_rollout_ref.rollout.n_agent'], { to: 'rollout.n', origin: 'Search-R1' });
  add(['max_turns'], { to: `${MULTI_TURN}.max_turns`, origin: 'ToolBench seed' });
  add(['do_search', 'use_toolbench'], {
    to: null,
    origin: 'ToolBench seed',
    note: 'tools are on when tools: lists them (the toolbench kind for ToolBench)',
  });
  add('toolbench_url', {
    to: 'tools.tools',
    origin: 'ToolBench seed',
    note: 'becomes the toolbench tool (`/virtual` appended to the server root)',
    value: (v) => [{ kind: 'toolbench', config: { toolbench_url: v } }],
  });
  add(['toolbench_key', 'default_category'], {
    to: null,
    origin: 'ToolBench seed',
    note: 'set on the toolbench tool: toolbench_key_env names the variable holding the key, category the default category',
  });
  add('data.max_obs_length', {
    to: `${MULTI_TURN}.max_tool_response_length`,
    origin: 'Search-R1',
    with: { [`${MULTI_TURN}.tool_response_truncate_unit`]: 'tokens' },
  });
  add('data.shuffle_train_dataloader', { to: 'data.shuffle', origin: 'Search-R1' });
  add(
    [
      'data.tokenizer',
      'data.prompt_key',
      'data.max_start_length',
      'data.val_batch_size',
      'data.train_data_num',
      'data.val_data_num',
      'data.return_raw_input_ids',
    ],
    {
      to: null,
      origin: 'Search-R1',
      note: "rows are verl's Parquet rows, read whole; the policy's tokenizer renders them",
    },
  );
  add(['algorithm.no_think_rl', 'algorithm.state_masking'], {
    to: null,
    origin: 'Search-R1',
    note: 'tool results are never trained on (loss mask 1 only on sampled tokens)',
  });
  // verl's trainer, data and actor keys (Hydra override paths work the same way)
  add('trainer.total_epochs', { to: 'trainer.epochs', origin: 'verl' });
  add('trainer.total_training_steps', { to: 'trainer.max_steps', origin: 'verl' });
  add('trainer.save_freq', { to: 'trainer.save_every', origin: 'verl' });
  add('trainer.test_freq', { to: 'trainer.eval_every', origin: 'verl' });
  add('trainer.experiment_name', { to: 'name', origin: 'verl' });
  add(
    [
      'trainer.default_local_dir',
      'trainer.default_hdfs_dir',
      'trainer.rollout_data_dir',
      'trainer.val_before_train',
      'trainer.resume_mode',
      'trainer.balance_batch',
      'trainer.log_val_generations',
    ],
    {
      to: null,
      origin: 'verl',
      note: 'runs write everything under runs/<runId>/ (checkpoints, trajectories, metrics), validate at v0 when eval_every is set, and resume with --resume',
    },
  );
  add('critic.cliprange_value', { to: 'algorithm.cliprange_value', origin: 'verl' });
  add(['trainer.project_name', 'trainer.logger', 'trainer.nnodes', 'trainer.n_gpus_per_node'], {
    to: null,
    origin: 'verl',
    note: 'runs are named by `name`, log to metrics.jsonl and TensorBoard (logging:), and size their GPU by the deployment',
  });
  add('data.train_files', { to: 'data.train', origin: 'verl' });
  add('data.val_files', { to: 'data.val', origin: 'verl' });
  add('data.train_batch_size', { to: 'trainer.batch_prompts', origin: 'verl' });
  add(['data.max_response_length'], { to: `${MULTI_TURN}.max_total_response_length`, origin: 'verl' });
  add(['data.return_raw_chat', 'data.filter_overlong_prompts', 'data.truncation'], {
    to: null,
    origin: 'verl',
    note: 'prompts stay chat messages; one longer than data.max_prompt_length fails the run at start',
  });
  add('actor_rollout_ref.model.path', { to: 'model.path', origin: 'verl' });
  add('actor_rollout_ref.model.enable_gradient_checkpointing', {
    to: 'model.gradient_checkpointing',
    origin: 'verl',
  });
  add('actor_rollout_ref.actor.optim.lr', { to: 'trainer.lr', origin: 'verl' });
  add('actor_rollout_ref.actor.optim.weight_decay', { to: 'trainer.weight_decay', origin: 'verl' });
  add('actor_rollout_ref.actor.optim.lr_warmup_steps', { to: 'trainer.warmup_steps', origin: 'verl' });
  add('actor_rollout_ref.actor.ppo_epochs', { to: 'trainer.ppo_epochs', origin: 'verl' });
  add('actor_rollout_ref.actor.grad_clip', { to: 'trainer.grad_clip', origin: 'verl' });
  for (const key of [
    'use_kl_loss',
    'kl_loss_coef',
    'kl_loss_type',
    'entropy_coeff',
    'clip_ratio_low',
    'clip_ratio_high',
    'clip_ratio_c',
    'loss_agg_mode',
  ])
    add(`actor_rollout_ref.actor.${key}`, { to: `algorithm.${key}`, origin: 'verl' });
  add('actor_rollout_ref.actor.clip_ratio', {
    to: ['algorithm.clip_ratio_low', 'algorithm.clip_ratio_high'],
    origin: 'verl',
  });
  add('algorithm.kl_ctrl.kl_coef', { to: 'algorithm.kl_coef', origin: 'verl' });
  add('algorithm.kl_ctrl.type', { to: null, origin: 'verl', note: 'the in-reward KL coefficient is fixed' });
  for (const key of ['temperature', 'top_p', 'top_k', 'enable_prefix_caching'])
    add(`actor_rollout_ref.rollout.${key}`, { to: `rollout.${key}`, origin: 'verl' });
  add('actor_rollout_ref.rollout.n', { to: 'rollout.n', origin: 'verl', soft: true });
  // MindSpeed-RL's other sections (its rl_config keys are read as top-level keys, see PREFIX_ALIASES)
  add('actor_config.lr', { to: 'trainer.lr', origin: 'MindSpeed-RL' });
  add('actor_config.weight_decay', { to: 'trainer.weight_decay', origin: 'MindSpeed-RL' });
  add('actor_config.clip_grad', { to: 'trainer.grad_clip', origin: 'MindSpeed-RL' });
  add('actor_config.adam_beta1', { to: 'trainer.adam_beta1', origin: 'MindSpeed-RL' });
  add('actor_config.adam_beta2', { to: 'trainer.adam_beta2', origin: 'MindSpeed-RL' });
  add('megatron_training.global_batch_size', { to: 'trainer.batch_prompts', origin: 'MindSpeed-RL' });
  add('megatron_training.train_iters', { to: 'trainer.max_steps', origin: 'MindSpeed-RL' });
  add('megatron_training.save_interval', { to: 'trainer.save_every', origin: 'MindSpeed-RL' });
  for (const key of ['temperature', 'top_p', 'top_k'])
    add(`generate_config.sampling_config.${key}`, { to: `rollout.${key}`, origin: 'MindSpeed-RL' });
  add('generate_config.sampling_config.max_tokens', { to: 'rollout.max_new_tokens', origin: 'MindSpeed-RL' });
  return out;
}

export const KEY_ALIASES: readonly KeyAlias[] = keyAliases();

// toolrl's run config in TRL's names: the GRPOConfig the peer benchmark gives TRL's GRPOTrainer so both systems train
// with the same G, batch, learning rate and schedule, clip range, loss aggregation, sampling and token budgets, and
// the list of what cannot be made the same (printed with the results, written into BENCHMARKS.md).
import type { RunConfig } from '#shared/schemas/config/run';
import type { TrainerConfig } from '#shared/schemas/config/trainer';

/** GRPOConfig keyword arguments (TRL 1.16), JSON-ready. */
export type GrpoKwargs = Record<string, unknown>;

export interface TrlSpecOptions {
  /** Learner steps of the RL stage (the bench's --max-steps). */
  steps: number;
  seed: number;
  /**
   * Completions in one TRL forward/backward (per_device_train_batch_size; the bench's --trl-micro-batch): the
   * batch's batch_prompts x n completions are generated together and trained in micro-batches of this many,
   * gradients accumulated into one optimizer step. Default: the whole batch in one micro-batch.
   */
  microBatch?: number;
}

/** The run config's loss aggregation in TRL's `loss_type`, or an error naming what TRL lacks. */
function lossType(config: RunConfig): string {
  const mode =
    config.algorithm.loss_agg_mode ??
    (config.algorithm.adv_estimator === 'dr_grpo' ? 'seq-mean-token-sum-norm' : 'token-mean');
  // token-mean over the whole batch is DAPO's; seq-mean-token-mean is GRPO's paper form; the constant normaliser is
  // Dr. GRPO's.
  const map: Record<string, string> = {
    'token-mean': 'dapo',
    'seq-mean-token-mean': 'grpo',
    'seq-mean-token-sum-norm': 'dr_grpo',
  };
  const t = map[mode];
  if (!t) throw new Error(`algorithm.loss_agg_mode ${mode} has no TRL loss_type`);
  return t;
}

export function trlGrpoKwargs(config: RunConfig, opts: TrlSpecOptions): GrpoKwargs {
  const { algorithm: alg, rollout, trainer } = config;
  if (alg.adv_estimator !== 'grpo' && alg.adv_estimator !== 'dr_grpo')
    throw new Error(`adv_estimator ${alg.adv_estimator}: the peer benchmark compares GRPO only`);
  if ((trainer.ppo_mini_batch_size ?? trainer.batch_prompts) !== trainer.batch_prompts)
    throw new Error('ppo_mini_batch_size below batch_prompts has no one-to-one TRL setting here');
  const completions = trainer.batch_prompts * rollout.n;
  const micro = opts.microBatch ?? completions;
  if (!(Number.isInteger(micro) && micro > 0 && completions % micro === 0))
    throw new Error(
      `a TRL micro-batch of ${micro} completions does not divide the batch's ${completions} (batch_prompts ${trainer.batch_prompts} x rollout.n ${rollout.n})`,
    );
  const mt = rollout.multi_turn;
  const kwargs: GrpoKwargs = {
    // One generation batch of batch_prompts x n completions, one optimizer step on it (toolrl's step), in
    // micro-batches of `micro` whose gradients accumulate: TRL generates per_device_train_batch_size x
    // steps_per_generation completions at once and its token-mean (`dapo`) loss divides by the whole generation
    // batch's tokens, so the step is the same one at any micro-batch.
    num_generations: rollout.n,
    per_device_train_batch_size: micro,
    gradient_accumulation_steps: completions / micro,
    steps_per_generation: completions / micro,
    num_iterations: trainer.ppo_epochs,
    max_steps: opts.steps,
    learning_rate: trainer.lr,
    ...trlSchedule(trainer),
    warmup_steps: trainer.warmup_steps,
    weight_decay: trainer.weight_decay,
    max_grad_norm: trainer.grad_clip,
    optim: 'adamw_torch',
    epsilon: alg.clip_ratio_low,
    epsilon_high: alg.clip_ratio_high,
    importance_sampling_level: alg.importance_sampling_level,
    loss_type: lossType(config),
    scale_rewards: alg.adv_estimator === 'dr_grpo' || !alg.norm_adv_by_std_in_grpo ? 'none' : 'group',
    beta: alg.use_kl_loss ? alg.kl_loss_coef : 0,
    temperature: rollout.temperature,
    top_p: rollout.top_p,
    top_k: rollout.top_k,
    // The whole completion (every turn and the tool responses between them) and each turn's own budget.
    max_completion_length: mt.max_total_response_length,
    generation_kwargs: { max_new_tokens: rollout.max_new_tokens },
    // A tool round adds a turn: at most max_turns - 1 rounds, and no more than max_tool_calls.
    max_tool_calling_iterations: Math.min(mt.max_tool_calls, mt.max_turns - 1),
    // Validation: every prompt of val sampled val_kwargs.n times, every eval_every steps.
    num_generations_eval: rollout.val_kwargs.n,
    per_device_eval_batch_size: 16 * rollout.val_kwargs.n,
    eval_strategy: trainer.eval_every > 0 ? 'steps' : 'no',
    ...(trainer.eval_every > 0 ? { eval_steps: trainer.eval_every } : {}),
    seed: opts.seed,
    data_seed: opts.seed,
    use_cpu: true,
    // model.dtype bf16 is autocast over fp32 master weights in toolrl's learner; TRL's `bf16` is accelerate's
    // autocast over the fp32 model (trl_grpo.py turns it off on a CPU without bf16 units, as toolrl's learner does).
    bf16: config.model.dtype === 'bf16',
    logging_steps: 1,
    save_strategy: 'no',
    report_to: 'none',
    disable_tqdm: true,
  };
  return kwargs;
}

/**
 * model.lora as peft's LoraConfig keyword arguments (JSON-ready), or undefined without LoRA. TRL continues the
 * adapter toolrl's warm start wrote (checkpoints/step-0/adapter); trl_grpo.py checks that adapter against these.
 */
export function trlLora(config: RunConfig): Record<string, unknown> | undefined {
  const lora = config.model.lora;
  if (!lora) return undefined;
  return {
    r: lora.rank,
    lora_alpha: lora.alpha,
    lora_dropout: lora.dropout,
    target_modules: [...lora.target_modules].sort(),
    ...(lora.layers_to_transform ? { layers_to_transform: [...lora.layers_to_transform] } : {}),
    task_type: 'CAUSAL_LM',
  };
}

/** What the comparison cannot hold equal, in one line each (config-dependent lines only where they apply). */
export function knownDifferences(config: RunConfig, opts: { microBatch?: number } = {}): string[] {
  const { model, rollout, trainer } = config;
  const weights =
    model.rollout_quantization === 'none'
      ? 'fp32 weights'
      : `${model.rollout_quantization} weights (rollout_quantization, blocks of ${model.rollout_quantization_block_size})`;
  const out = [
    "a malformed tool call: toolrl answers it with a parse-error message and gives the model another turn; TRL's parser falls back to plain text and the episode ends",
    `sampling: toolrl samples with its ONNX Runtime engine (${weights}${model.lora ? ', the adapter merged into them' : ''}) and recomputes old log-probs in the learner; TRL samples with transformers generate() from the model it trains (no rollout/learner mismatch, so no importance-sampling correction)`,
    'data order: each system shuffles the training questions with its own seeded sampler',
  ];
  const completions = trainer.batch_prompts * rollout.n;
  const micro = opts.microBatch ?? completions;
  if (trainer.micro_batch_tokens !== undefined || micro !== completions)
    out.push(
      `micro-batches: toolrl packs the step's sequences into micro-batches of at most ${trainer.micro_batch_tokens ?? 'unlimited'} tokens; TRL trains ${micro === completions ? `all ${completions} completions in one forward` : `${micro} completions a forward (--trl-micro-batch), ${completions / micro} accumulated into the step`}, padded to the longest (accumulated, the gradient is that of one forward of the batch)`,
    );
  if (model.lora)
    out.push(
      `LoRA (r ${model.lora.rank}, alpha ${model.lora.alpha}${model.lora.layers_to_transform ? `, layers ${model.lora.layers_to_transform[0]}-${model.lora.layers_to_transform.at(-1)}` : ''}): TRL continues the warm start's own adapter through peft (PeftModel, is_trainable); toolrl's learner runs the same peft adapter in its own decoder`,
    );
  if (model.dtype === 'bf16')
    out.push(
      "bf16: toolrl's learner autocasts its forward to bf16 over fp32 master weights on a CPU with bf16 units; TRL's `bf16` is accelerate's autocast over the fp32 model (where it applies is measured and listed below)",
    );
  if (config.algorithm.filter_groups)
    out.push(
      'filter_groups: toolrl drops groups whose rewards are all equal before the step (DAPO dynamic sampling); TRL keeps them (zero advantage, but counted in the token-mean denominator)',
    );
  if (config.algorithm.rollout_is !== 'none')
    out.push(
      `rollout_is ${config.algorithm.rollout_is}: toolrl's truncated importance sampling has nothing to correct in TRL, which samples with the trained model`,
    );
  if (trainer.max_staleness > 0)
    out.push(
      `overlap: toolrl samples the next batches while the learner trains, with a policy at most ${trainer.max_staleness} version${trainer.max_staleness === 1 ? '' : 's'} old (${trainer.deterministic ? 'deterministic mode: which version samples which batch is fixed' : 'asynchronous mode, trainer.deterministic=false: each rollout takes the newest policy and a step trains the groups that finish first'}); TRL generates and trains in turn, on-policy`,
    );
  const val = rollout.val_kwargs;
  if (val.temperature !== rollout.temperature || val.top_p !== rollout.top_p)
    out.push(
      `validation sampling: toolrl validates at temperature ${val.temperature}, TRL at the training temperature ${rollout.temperature}`,
    );
  if (rollout.multi_turn.max_tool_response_length)
    out.push(
      'tool responses: toolrl truncates them at max_tool_response_length tokens, the bridge in characters (the calculator never comes near either)',
    );
  return out;
}

/** toolrl's learning-rate schedule in Hugging Face's names (`lr_scheduler_type` and its kwargs). */
function trlSchedule(trainer: TrainerConfig): {
  lr_scheduler_type: string;
  lr_scheduler_kwargs?: Record<string, number | string>;
} {
  switch (trainer.lr_scheduler) {
    case 'constant':
      return { lr_scheduler_type: 'constant' };
    case 'cosine':
      return {
        lr_scheduler_type: 'cosine_with_min_lr',
        lr_scheduler_kwargs: { min_lr_rate: trainer.min_lr_ratio },
      };
    case 'wsd':
      return {
        lr_scheduler_type: 'warmup_stable_decay',
        lr_scheduler_kwargs: {
          num_decay_steps: trainer.decay_steps,
          min_lr_ratio: trainer.min_lr_ratio,
          decay_type: 'cosine',
        },
      };
  }
}

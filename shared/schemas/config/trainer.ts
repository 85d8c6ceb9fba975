// `trainer:` of the run config: batch, optimiser, schedule, staleness, publishing and checkpoints.
import { z } from 'zod';

// The schedule's floor and wsd's decay, shared by the warm start and the RL stage.
const minLrRatio = () =>
  z.number().min(0).max(1).default(0).describe('Where `cosine` and `wsd` end, as a fraction of lr.');
const decaySteps = (description: string) => z.number().int().nonnegative().default(0).describe(description);
const wsdHasDecaySteps = (t: { lr_scheduler: string; decay_steps: number }) =>
  t.lr_scheduler !== 'wsd' || t.decay_steps > 0;
const WSD_NEEDS_DECAY_STEPS = {
  message: 'lr_scheduler wsd decays over the last decay_steps steps: set decay_steps (> 0)',
  path: ['decay_steps'],
};

export const SftConfigSchema = z
  .object({
    data: z
      .string()
      .describe('Parquet or JSONL of demonstrations (chat messages), relative to the config file.'),
    steps: z.number().int().nonnegative().default(100).describe('Optimiser steps of the warm start.'),
    lr: z.number().positive().default(1e-4).describe('Its AdamW learning rate.'),
    batch_size: z.number().int().positive().default(16).describe('Demonstrations per step.'),
    lr_scheduler: z
      .enum(['constant', 'cosine', 'wsd'])
      .default('constant')
      .describe(
        '`cosine` decays the SFT learning rate to `min_lr_ratio * lr` over `steps`; `wsd` (warmup-stable-decay) holds it until the last `decay_steps` steps, which decay it along a cosine to `min_lr_ratio * lr`.',
      ),
    min_lr_ratio: minLrRatio(),
    decay_steps: decaySteps('`wsd`: the last steps, over which the learning rate decays (needed by `wsd`).'),
    warmup_steps: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        'Linear learning-rate warmup from 0 over the first steps, then `lr_scheduler` over the rest. Without it, AdamW\'s first steps at a large `lr` can leave a small model unable to learn to copy from its prompt for hundreds of steps (measured on the quick start\'s model: README.md, "How the config was chosen").',
      ),
    context_warmup_steps: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        'Sequence length warmup (Li et al., arXiv:2108.06084): for the first `context_warmup_steps` steps each demonstration keeps only the last `context_warmup_tokens` tokens before its first assistant token (every assistant token is kept). A small model learns to copy from its prompt (operands into a call) far sooner from short contexts, then carries the skill to full-length ones. 0 disables.',
      ),
    context_warmup_tokens: z
      .number()
      .int()
      .positive()
      .default(32)
      .describe('Context tokens kept before the first assistant token during the warmup.'),
    context_warmup_schedule: z
      .enum(['step', 'linear'])
      .default('step')
      .describe(
        "`step`: `context_warmup_tokens` throughout the warmup, then the whole context. `linear`: the kept context grows from `context_warmup_tokens` to the longest demonstration's over the warmup steps (the paper's ramp).",
      ),
    seed: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe(
        "Seeds the warm start's walk over its demonstrations; unset: `trainer.seed`. Set, every `trainer.seed` trains the same warm start (the same demonstrations in the same order) and varies only the RL stage, as RL seeds are usually compared from one SFT checkpoint.",
      ),
    ptx_coef: z
      .number()
      .nonnegative()
      .default(0)
      .describe(
        "Keeps training on demonstrations during RL (InstructGPT's PPO-ptx, OpenRLHF's ptx_coef): every actor update adds `ptx_coef` times the token-mean cross-entropy of `ptx_batch_size` demonstrations (from `ptx_data`, else `data`; drawn by the run's seed and the step) to the policy loss. It pulls back a kind of question whose samples all went wrong the same way, whose group carries no signal. 0 (the default) disables; `steps: 0` with a `ptx_coef` trains on demonstrations during RL only.",
      ),
    ptx_data: z
      .string()
      .optional()
      .describe(
        'Parquet or JSONL of demonstrations for `ptx_coef` (relative to the config file); unset: `data`. For a warm start on mixed demonstrations and a term on correct ones only.',
      ),
    ptx_batch_size: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Demonstrations per learner step for `ptx_coef`; unset: `batch_size`.'),
  })
  .strict()
  .refine(wsdHasDecaySteps, WSD_NEEDS_DECAY_STEPS)
  .refine((t) => t.ptx_coef > 0 || (t.ptx_data === undefined && t.ptx_batch_size === undefined), {
    message: 'ptx_data and ptx_batch_size are read only with ptx_coef > 0: set ptx_coef',
    path: ['ptx_coef'],
  })
  .meta({
    id: 'SftConfig',
    description:
      "`trainer.sft`: an SFT warm start on chat demonstrations (cross-entropy on assistant tokens) before the first policy is published; set in a curriculum stage's overrides, it runs (once) before that stage's first batch trains.",
  });

export const TrainerConfigSchema = z
  .object({
    batch_prompts: z.number().int().positive().default(8).describe('Groups (prompts) per learner step.'),
    lr: z.number().positive().default(1e-6).describe('AdamW learning rate (fp32 master weights).'),
    lr_scheduler: z
      .enum(['constant', 'cosine', 'wsd'])
      .default('constant')
      .describe(
        "`cosine` decays to `min_lr_ratio * lr` over max_steps (or the planned groups / batch_prompts). `wsd` (warmup-stable-decay, Hugging Face's `warmup_stable_decay`) holds `lr` after the warmup until the run's last `decay_steps` learner steps, which decay it along a cosine to `min_lr_ratio * lr`.",
      ),
    warmup_steps: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe('Linear warmup from 0, in learner steps.'),
    min_lr_ratio: minLrRatio(),
    decay_steps: decaySteps(
      "`wsd`: the run's last learner steps, over which the learning rate decays (needed by `wsd`; Hugging Face's `num_decay_steps`).",
    ),
    weight_decay: z
      .number()
      .nonnegative()
      .default(0)
      .describe('AdamW decoupled weight decay (arXiv:1711.05101), not on biases and norms.'),
    adam_beta1: z
      .number()
      .min(0)
      .lt(1)
      .default(0.9)
      .describe(
        "AdamW's beta1, the decay of its moving average of gradients (momentum), for the RL steps (the warm start " +
          "keeps AdamW's defaults); Hugging Face's and Megatron's adam_beta1.",
      ),
    adam_beta2: z
      .number()
      .min(0)
      .lt(1)
      .default(0.999)
      .describe("AdamW's beta2, the decay of its moving average of squared gradients, for the RL steps."),
    grad_clip: z.number().positive().default(1.0).describe('Max global gradient norm.'),
    ppo_epochs: z
      .number()
      .int()
      .positive()
      .default(1)
      .describe('Passes over each batch of groups (PPO epochs).'),
    ppo_mini_batch_size: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "Groups (prompts) per actor optimiser step, as verl's ppo_mini_batch_size: each epoch shuffles the batch's groups and steps once per mini-batch. Unset: the whole batch, one step per epoch.",
      ),
    critic_warmup: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        "Learner steps at the start that train only the separate critic (verl's trainer.critic_warmup).",
      ),
    micro_batch_tokens: z
      .number()
      .int()
      .positive()
      .default(8192)
      .describe('Token budget of one packed micro-batch.'),
    logprob_chunk_size: z
      .number()
      .int()
      .positive()
      .default(2048)
      .describe(
        'Rows of the [tokens x vocabulary] logits computed at once for log-probs (never the full matrix).',
      ),
    dedup_samples: z
      .boolean()
      .default(false)
      .describe(
        "Pack the samples of a group that have the same tokens once: a copy's loss tokens read the first one's " +
          "hidden states, so the transformer's forward and backward run once for both (the log-prob head and the " +
          'loss still count each copy, with its own advantage). Log-probs are unchanged, gradients equal up to ' +
          'float rounding. Once the entropy is low many samples repeat: the SmolLM2 example computed 26-33% fewer ' +
          'tokens a step. Off by default, so earlier runs repeat bit for bit. Not applied by the sharded learner.',
      ),
    share_batch_prefix: z
      .boolean()
      .default(false)
      .describe(
        'On a CPU, pack the tokens every sequence of a step begins with (a system prompt and its tool schema) once ' +
          'a micro-batch, seen by every group in it, instead of once in every group; the warm start (trainer.sft) ' +
          'packs its demonstrations so too. Log-probs equal up to float ' +
          "rounding, gradients too. The SmolLM2 example's prompts share 187 of ~224 tokens. Off by default, so " +
          'earlier runs repeat bit for bit. Not applied by the sharded learner, nor on CUDA.',
      ),
    epochs: z.number().int().positive().default(1).describe('Passes over the training data.'),
    max_steps: z.number().int().positive().optional().describe('Stop after this many learner steps.'),
    max_staleness: z
      .number()
      .int()
      .nonnegative()
      .default(1)
      .describe('A group whose oldest sampled token is more than this many versions behind is dropped.'),
    max_dead_letter_fraction: z
      .number()
      .min(0)
      .max(1)
      .default(0.05)
      .describe(
        'The run fails, naming the reasons, once more than this fraction of its planned train groups were dead-lettered (a stage gave up on one of their messages: a reward that throws, a tool server that is down). Below it each such group is dropped and counted and the run goes on (a group whose message a DLQ redrive sends back is trained after all).',
      ),
    publish_every: z
      .number()
      .int()
      .positive()
      .default(1)
      .describe('A new policy version every this many learner steps.'),
    save_every: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'A checkpoint every this many learner steps (10 when neither this nor save_every_epochs is set).',
      ),
    save_every_epochs: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "A checkpoint every this many epochs (EnvTuning's cadence), instead of save_every: converted to learner steps when the run starts, per curriculum stage, as epochs x rows / batch_prompts (at least 1).",
      ),
    keep_checkpoints: z
      .number()
      .int()
      .positive()
      .default(2)
      .describe('Complete checkpoints kept (older ones are deleted once a newer one is complete).'),
    keep_policy_versions: z
      .enum(['needed', 'all'])
      .default('needed')
      .describe(
        "Which published policy versions (the rollout bundles under policy/v<N>/) stay in the store. `needed`: a version is deleted once nothing can need it; kept are v0, every version validation runs on (multiples of eval_every), the version of every checkpoint, the final one, the newest max_staleness + 2 (rollouts in flight may still load them) and any version whose folder holds a file a kept version's manifest names. In a deterministic run a version published after the newest checkpoint keeps its manifest.json until a newer checkpoint is complete, so a resume can check its replay against it. `all`: every version is kept.",
      ),
    eval_every: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe('Validation rollouts every this many policy versions; 0 disables.'),
    seed: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe('Seeds the learner (torch) and the walk over the data.'),
    deterministic: z
      .boolean()
      .default(false)
      .describe(
        'Reproducible runs: train group p (batch t = p / batch_prompts) is sampled by the policy the learner had after settling batch t - max_staleness (v0 before that), and each step trains exactly the groups of its batch, in feeder order, whatever order they finish in. The same config and seed then give the same learning metrics run after run on one machine; the price is that rollouts for batch t + max_staleness + 1 wait for batch t.',
      ),
    num_gpus: z
      .number()
      .int()
      .positive()
      .max(1024)
      .default(1)
      .describe(
        "Learner processes (GPUs) for `toolrl train`: above 1 the learner runs under torchrun as an FSDP2 data-parallel job (`toolrl train --learner-device cpu` runs them on CPU with gloo). On AWS the environment's `learner.gpus` (x nodes) sets the job's size. `npx toolrl plan` checks that it fits.",
      ),
    cpu_offload: z
      .boolean()
      .default(false)
      .describe(
        'Sharded learner: parameters, gradients and AdamW state in host memory, the optimizer step on CPU.',
      ),
    sft: SftConfigSchema.optional().describe('Optional SFT warm start before RL.'),
  })
  .strict()
  .refine((t) => t.save_every === undefined || t.save_every_epochs === undefined, {
    message: 'give save_every (learner steps) or save_every_epochs, not both',
    path: ['save_every_epochs'],
  })
  .refine(wsdHasDecaySteps, WSD_NEEDS_DECAY_STEPS)
  .meta({
    id: 'TrainerConfig',
    description:
      '`trainer:` of the run config: batch, optimiser, schedule, staleness, publishing and checkpoints.',
  });
export type TrainerConfig = z.infer<typeof TrainerConfigSchema>;

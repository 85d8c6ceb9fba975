"""The learner's configuration: one frozen dataclass of every knob of a learner step, read from the typed run
config (run_config.py, generated from the zod schemas in shared/schemas/config/*.ts): the `algorithm` and `trainer`
sections, `model`, `critic`, `logging` and the two rollout settings the math needs. Names are the YAML keys, which
follow verl/TRL; types (enumerations as Literal) and defaults are the generated sections'."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .run_config import (
    AdvEstimator,
    AlgorithmConfig,
    ContextWarmupSchedule,
    CriticConfig,
    Dtype,
    FilterGroupsNorm,
    ImportanceSamplingLevel,
    KeepPolicyVersions,
    KlLossType,
    KlPenalty,
    LoggingConfig,
    LoraConfig,
    LossAggMode,
    LrScheduler,
    ModelConfig,
    MultiTurnConfig,
    RolloutConfig,
    RolloutIs,
    RolloutIsMode,
    RolloutQuantization,
    RunConfig,
    SftConfig,
    TrainerConfig,
)

GROUP_ESTIMATORS = ("grpo", "dr_grpo", "rloo")


# LoRA's default targets, for the policy and the critic alike: every linear layer of a Qwen2/Llama block.
LORA_TARGET_MODULES = LoraConfig.target_modules


def _own(section: Any, prefix: str = "") -> dict[str, Any]:
    """A typed section's set scalar fields, their names prefixed: nested sections are left out, and so are unset
    optional keys (None), which keep LearnerConfig's default."""
    values = {f.name: getattr(section, f.name) for f in dataclasses.fields(section)}
    return {prefix + k: v for k, v in values.items() if v is not None and not dataclasses.is_dataclass(v)}


@dataclass(frozen=True)
class LearnerConfig:
    """Every knob of a learner step, flat, under the run config's names (`from_sections` reads them):

    `algorithm:` and `trainer:` fields under their own names; `trainer.sft`'s as sft_* (sft_data, sft_steps, ...);
    `model:`'s under their own names but `path` (model_path) and `lora` (lora_rank, lora_alpha, lora_dropout,
    lora_target_modules, lora_layers_to_transform; None rank = full fine-tuning); `critic:`'s as critic_*
    (critic_model_path, critic_gradient_checkpointing and critic_lora_* from its `model:`; None critic_model_path
    = GAE's values from a head on the policy's trunk); `rollout.temperature` (the behaviour log-probs are of
    logits / T) and `rollout.multi_turn.max_total_response_length` (Dr. GRPO's default normaliser L);
    `logging.tensorboard`, `logging.progress_interval_s` and `logging.wandb` (wandb_project, wandb_entity).
    Each field's meaning is its schema field's docstring in run_config.py. Derived: `resolved_loss_agg_mode`
    (unset: seq-mean-token-sum-norm for dr_grpo, else token-mean), `loss_norm_constant` (loss_scale_factor, else
    max_total_response_length); critic_ppo_mini_batch_size, critic_ppo_epochs and critic_cliprange_value unset
    are the actor's.
    """

    # algorithm
    adv_estimator: AdvEstimator = AlgorithmConfig.adv_estimator
    norm_adv_by_std_in_grpo: bool = AlgorithmConfig.norm_adv_by_std_in_grpo
    clip_ratio_low: float = AlgorithmConfig.clip_ratio_low
    clip_ratio_high: float = AlgorithmConfig.clip_ratio_high
    clip_ratio_c: float | None = AlgorithmConfig.clip_ratio_c
    importance_sampling_level: ImportanceSamplingLevel = AlgorithmConfig.importance_sampling_level
    loss_agg_mode: LossAggMode | None = AlgorithmConfig.loss_agg_mode
    loss_scale_factor: float | None = AlgorithmConfig.loss_scale_factor
    use_kl_loss: bool = AlgorithmConfig.use_kl_loss
    kl_loss_coef: float = AlgorithmConfig.kl_loss_coef
    kl_loss_type: KlLossType = AlgorithmConfig.kl_loss_type
    use_kl_in_reward: bool = AlgorithmConfig.use_kl_in_reward
    kl_penalty: KlPenalty = AlgorithmConfig.kl_penalty
    kl_coef: float = AlgorithmConfig.kl_coef
    entropy_coeff: float = AlgorithmConfig.entropy_coeff
    rollout_is: RolloutIs = AlgorithmConfig.rollout_is
    rollout_is_mode: RolloutIsMode = AlgorithmConfig.rollout_is_mode
    rollout_is_threshold: float = AlgorithmConfig.rollout_is_threshold
    filter_groups: bool = AlgorithmConfig.filter_groups
    refill_filtered_groups: bool = AlgorithmConfig.refill_filtered_groups
    filter_groups_norm: FilterGroupsNorm = AlgorithmConfig.filter_groups_norm
    max_num_gen_batches: int = AlgorithmConfig.max_num_gen_batches
    gamma: float = AlgorithmConfig.gamma
    lam: float = AlgorithmConfig.lam
    vf_coef: float = AlgorithmConfig.vf_coef
    cliprange_value: float = AlgorithmConfig.cliprange_value
    # trainer
    batch_prompts: int = TrainerConfig.batch_prompts
    lr: float = TrainerConfig.lr
    lr_scheduler: LrScheduler = TrainerConfig.lr_scheduler
    warmup_steps: int = TrainerConfig.warmup_steps
    min_lr_ratio: float = TrainerConfig.min_lr_ratio
    decay_steps: int = TrainerConfig.decay_steps
    weight_decay: float = TrainerConfig.weight_decay
    adam_beta1: float = TrainerConfig.adam_beta1
    adam_beta2: float = TrainerConfig.adam_beta2
    grad_clip: float = TrainerConfig.grad_clip
    ppo_epochs: int = TrainerConfig.ppo_epochs
    ppo_mini_batch_size: int | None = TrainerConfig.ppo_mini_batch_size
    critic_warmup: int = TrainerConfig.critic_warmup
    micro_batch_tokens: int = TrainerConfig.micro_batch_tokens
    logprob_chunk_size: int = TrainerConfig.logprob_chunk_size
    dedup_samples: bool = TrainerConfig.dedup_samples
    share_batch_prefix: bool = TrainerConfig.share_batch_prefix
    max_steps: int | None = TrainerConfig.max_steps
    max_staleness: int = TrainerConfig.max_staleness
    publish_every: int = TrainerConfig.publish_every
    save_every: int = 10  # the schema's default when neither save_every nor save_every_epochs is set
    keep_checkpoints: int = TrainerConfig.keep_checkpoints
    keep_policy_versions: KeepPolicyVersions = TrainerConfig.keep_policy_versions
    eval_every: int = TrainerConfig.eval_every
    seed: int = TrainerConfig.seed
    deterministic: bool = TrainerConfig.deterministic
    num_gpus: int = TrainerConfig.num_gpus
    cpu_offload: bool = TrainerConfig.cpu_offload
    # trainer.sft (None sft_data: no warm start)
    sft_data: str | None = None
    sft_steps: int = SftConfig.steps
    sft_lr: float = SftConfig.lr
    sft_batch_size: int = SftConfig.batch_size
    sft_lr_scheduler: LrScheduler = SftConfig.lr_scheduler
    sft_min_lr_ratio: float = SftConfig.min_lr_ratio
    sft_decay_steps: int = SftConfig.decay_steps
    sft_warmup_steps: int = SftConfig.warmup_steps
    sft_context_warmup_steps: int = SftConfig.context_warmup_steps
    sft_context_warmup_tokens: int = SftConfig.context_warmup_tokens
    sft_context_warmup_schedule: ContextWarmupSchedule = SftConfig.context_warmup_schedule
    sft_seed: int | None = None  # None: seed
    sft_ptx_coef: float = SftConfig.ptx_coef
    sft_ptx_data: str | None = None
    sft_ptx_batch_size: int | None = None
    # model
    model_path: str = "tiny"
    dtype: Dtype = ModelConfig.dtype
    gradient_checkpointing: bool = ModelConfig.gradient_checkpointing
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_dropout: float = LoraConfig.dropout
    lora_target_modules: tuple[str, ...] = LoraConfig.target_modules
    lora_layers_to_transform: tuple[int, ...] | None = LoraConfig.layers_to_transform
    rollout_quantization: RolloutQuantization = ModelConfig.rollout_quantization
    rollout_quantization_block_size: int = ModelConfig.rollout_quantization_block_size
    chat_template: str | None = ModelConfig.chat_template
    # critic
    critic_model_path: str | None = None
    critic_lr: float = CriticConfig.lr
    critic_weight_decay: float = CriticConfig.weight_decay
    critic_grad_clip: float = CriticConfig.grad_clip
    critic_lr_warmup_steps: int = CriticConfig.lr_warmup_steps
    critic_ppo_mini_batch_size: int | None = CriticConfig.ppo_mini_batch_size
    critic_ppo_epochs: int | None = CriticConfig.ppo_epochs
    critic_cliprange_value: float | None = CriticConfig.cliprange_value
    critic_lora_rank: int | None = None
    critic_lora_alpha: float | None = None
    critic_lora_dropout: float = LoraConfig.dropout
    critic_lora_target_modules: tuple[str, ...] = LoraConfig.target_modules
    critic_gradient_checkpointing: bool = ModelConfig.gradient_checkpointing
    # rollout / logging
    temperature: float = RolloutConfig.temperature
    max_total_response_length: int = MultiTurnConfig.max_total_response_length
    tensorboard: bool = LoggingConfig.tensorboard
    # `logging.progress_interval_s`: how often the warm start's progress is written to learner/warm-start.json.
    progress_interval_s: float = LoggingConfig.progress_interval_s
    wandb_project: str | None = None
    wandb_entity: str | None = None

    @property
    def resolved_loss_agg_mode(self) -> str:
        if self.loss_agg_mode is not None:
            return self.loss_agg_mode
        return "seq-mean-token-sum-norm" if self.adv_estimator == "dr_grpo" else "token-mean"

    @property
    def loss_norm_constant(self) -> float:
        return float(self.loss_scale_factor or self.max_total_response_length)

    @property
    def use_lora(self) -> bool:
        return self.lora_rank is not None

    @property
    def needs_reference(self) -> bool:
        return self.use_kl_loss or self.use_kl_in_reward

    @property
    def group_relative(self) -> bool:
        return self.adv_estimator in GROUP_ESTIMATORS

    @property
    def has_critic(self) -> bool:
        """A separate critic model (else GAE's values come from a head on the policy's trunk)."""
        return self.critic_model_path is not None

    @classmethod
    def from_run_config(cls, run_config: dict[str, Any], stage: str | None = None) -> LearnerConfig:
        """Validate a run config (the resolved one from run.json, or a user's YAML) and read the learner's
        fields from its typed sections; `stage` applies that curriculum stage's `algorithm`/`trainer` overrides."""
        from .contracts import validate  # jsonschema is not needed to build a config by hand (bench/)

        validate("run-config", run_config)
        if stage is not None:
            stages = {s["name"]: s for s in run_config.get("stages") or []}
            if stage not in stages:
                raise ValueError(f"unknown stage {stage!r}; the run config has {sorted(stages) or 'none'}")
            overrides = stages[stage].get("overrides") or {}
            run_config = {
                **run_config,
                **{
                    section: {**(run_config.get(section) or {}), **(overrides.get(section) or {})}
                    for section in ("algorithm", "trainer")
                },
            }
        return cls.from_sections(RunConfig.from_dict(run_config))

    @classmethod
    def from_sections(cls, run: RunConfig) -> LearnerConfig:
        """The learner's fields from the typed run config, named as the class docstring says."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in section_fields(run).items() if k in names})

    def stage_configs(
        self, run_config: dict[str, Any], resolved: dict[str, Any] | None = None
    ) -> dict[str, LearnerConfig]:
        """The config of every curriculum stage, in the order of `stages`. `resolved` is run.json's: each stage's
        complete config as the run-starter merged it (shared/config/merge.ts), the one the stage's rollouts ran
        with, so its `rollout.temperature` and `max_total_response_length` are the stage's. Without it (a config
        handed to the learner, a run.json from before `resolved`) only `algorithm` and `trainer` overrides are
        read, and a stage that overrides another field the learner reads is refused rather than trained at the
        run's values."""
        out = {}
        merged = (resolved or {}).get("stages") or {}
        for s in run_config.get("stages") or []:
            name = s["name"]
            if name in merged:
                out[name] = LearnerConfig.from_run_config(merged[name])
                continue
            over = s.get("overrides") or {}
            rollout = over.get("rollout") or {}
            read = [k for k in ("model", "critic", "logging") if k in over]
            read += ["rollout.temperature"] if "temperature" in rollout else []
            mt = rollout.get("multi_turn") or {}
            read += (
                ["rollout.multi_turn.max_total_response_length"] if "max_total_response_length" in mt else []
            )
            if read:
                raise ValueError(
                    f"stage {name!r} overrides {', '.join(read)}: the learner reads such a stage's config from "
                    "run.json's `resolved` (written by toolrl's run-starter), and this run has none for it"
                )
            out[name] = LearnerConfig.from_run_config(run_config, stage=name)
        return out

    @staticmethod
    def stages_with_own_sft(run_config: dict[str, Any]) -> set[str]:
        """Curriculum stages whose overrides set `trainer.sft`'s warm start (a stage that only inherits the run's
        `trainer.sft`, or sets only its ptx_* keys, has no warm start of its own to train)."""
        return {
            s["name"]
            for s in run_config.get("stages") or []
            if any(
                not k.startswith("ptx_")
                for k in (((s.get("overrides") or {}).get("trainer") or {}).get("sft") or {})
            )
        }

    def replace(self, **changes: Any) -> LearnerConfig:
        return dataclasses.replace(self, **changes)


def section_fields(run: RunConfig) -> dict[str, Any]:
    """Every field of the typed run config the learner may read, flat under LearnerConfig's names (the sections'
    fields the learner does not read are among them; `from_sections` keeps its own)."""
    kw = {**_own(run.algorithm), **_own(run.trainer), **_own(run.model), "model_path": run.model.path}
    if run.trainer.sft:
        kw.update(_own(run.trainer.sft, "sft_"))
    if run.model.lora:
        kw.update(_own(run.model.lora, "lora_"))
    if run.critic:
        kw.update(_own(run.critic, "critic_"), **_own(run.critic.model, "critic_"))
        kw["critic_model_path"] = run.critic.model.path
        if run.critic.model.lora:
            kw.update(_own(run.critic.model.lora, "critic_lora_"))
    kw.update(
        temperature=run.rollout.temperature,
        max_total_response_length=run.rollout.multi_turn.max_total_response_length,
        tensorboard=run.logging.tensorboard,
        progress_interval_s=run.logging.progress_interval_s,
    )
    if run.logging.wandb:
        kw.update(wandb_project=run.logging.wandb.project, wandb_entity=run.logging.wandb.entity)
    return kw

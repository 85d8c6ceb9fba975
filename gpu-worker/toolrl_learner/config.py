"""The learner's configuration: one frozen dataclass read from the run config's `algorithm`, `trainer`
and `model` sections (plus the two rollout settings the math needs). Names are the YAML keys, which
follow verl/TRL; defaults are the zod schemas' (shared/schemas/config/*.ts), and a test holds the two
in step through the generated JSON Schema."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

GROUP_ESTIMATORS = ("grpo", "dr_grpo", "rloo")


# LoRA's default targets, for the policy and the critic alike: every linear layer of a Qwen2/Llama block.
LORA_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LearnerConfig:
    """Every knob of a learner step. `algorithm:` keys

    adv_estimator ("grpo"): grpo (group mean/std, arXiv:2402.03300), dr_grpo (no std, arXiv:2503.20783),
        rloo (leave-one-out baseline, arXiv:2402.14740), reinforce_pp (batch-normalised returns,
        arXiv:2501.03262), gae (PPO with a value head on the policy's trunk, arXiv:1506.02438).
    norm_adv_by_std_in_grpo (True): divide GRPO advantages by the group std (Dr. GRPO: False).
    clip_ratio_low (0.2), clip_ratio_high (0.28): PPO's epsilon below / above 1 (arXiv:1707.06347);
        a larger high bound is DAPO's clip-higher (arXiv:2503.14476).
    clip_ratio_c (None): dual-clip constant c > 1 bounding the loss of negative advantages at -A c
        (arXiv:1912.09729); None disables.
    importance_sampling_level ("token"): token ratios (PPO/GRPO) or one ratio per sequence, the geometric
        mean of its token ratios (GSPO, arXiv:2507.18071; use clip ratios around 3e-4/4e-4 with it).
    loss_agg_mode (None -> "seq-mean-token-sum-norm" for dr_grpo, else "token-mean"): token-mean (DAPO),
        seq-mean-token-mean (GRPO as published), seq-mean-token-sum, seq-mean-token-sum-norm (Dr. GRPO).
    loss_scale_factor (None -> max_total_response_length): Dr. GRPO's constant normaliser L.
    use_kl_loss (False), kl_loss_coef (0.001), kl_loss_type ("k3"): KL to the reference policy as a loss
        term (GRPO, arXiv:2402.03300), estimator k1/k2/k3 (Schulman's KL approximations).
    use_kl_in_reward (False), kl_penalty ("k1"), kl_coef (0.001): KL as a per-token reward penalty
        instead (InstructGPT/PPO-RLHF, arXiv:2203.02155).
    entropy_coeff (0.0): entropy bonus weight (subtracted from the loss).
    rollout_is ("token"), rollout_is_mode ("truncate"), rollout_is_threshold (2.0): importance weights
        pi_old / pi_rollout per token or sequence, truncated at or masked outside the threshold, because
        the ONNX rollout and the bf16 learner never agree exactly (TIS, Yao et al. 2025); "none" disables.
    filter_groups (True): drop groups that carry no signal (all rewards equal; for group-relative
        estimators also groups of one) - DAPO's dynamic sampling filter (arXiv:2503.14476).
    refill_filtered_groups (False): keep reading groups until the batch has batch_prompts groups with
        signal (DAPO); False trains on what is left of the batch_prompts groups received.
    max_num_gen_batches (10): batches (batch_prompts groups each) in a row that may train nothing (every group
        dropped: no signal, or stale) before the learner fails the run with a reason naming the cause; 0 or less is
        no bound (verl's algorithm.filter_groups.max_num_gen_batches, DAPO's dynamic sampling).
    gamma (1.0), lam (1.0): discount and GAE lambda (gae, reinforce_pp).
    vf_coef (0.5), cliprange_value (0.2): value loss weight and clip range (PPO).

    `trainer:` keys

    batch_prompts (8): groups per learner step. lr (1e-6): AdamW learning rate (fp32 master weights).
    lr_scheduler ("constant"), warmup_steps (0), min_lr_ratio (0.0): linear warmup then constant or
        cosine decay to min_lr_ratio * lr over the run's steps.
    weight_decay (0.0): AdamW decoupled weight decay (arXiv:1711.05101), not on biases and norms.
    grad_clip (1.0): max global gradient norm.
    ppo_epochs (1): passes over each batch; with 1 pass and 1 mini-batch the old log-probs are the current
        ones (no extra forward), otherwise they are recomputed once before the first optimiser step.
    ppo_mini_batch_size (None -> the whole batch): groups per actor optimiser step (verl's
        ppo_mini_batch_size, in prompts); each epoch shuffles the groups and steps once per mini-batch.
    critic_warmup (0): learner steps at the start that train only the separate critic (verl's
        trainer.critic_warmup); the policy stays as it is.
    micro_batch_tokens (8192): token budget of one packed micro-batch (gradients accumulate over them).
    logprob_chunk_size (2048): rows of logits materialised at once when computing log-probs.
    max_steps (None): stop after this many learner steps. max_staleness (1): drop a group whose oldest
        sampled token is more than this many policy versions behind.
    publish_every (1), save_every (10), keep_checkpoints (2): publish a policy version / write a
        checkpoint every this many steps; complete checkpoints kept.
    seed (0): torch RNG seed.
    deterministic (False): train batch t = the groups at feeder positions [t b, (t+1) b), in that order, once all
        have arrived, and record the version after each batch so the feeder pins batch t's rollouts to the
        version after t - max_staleness batches (train/ordered.py): the same config and seed give the same run.
    num_gpus (1): learner processes (GPUs) of an embedded run: above 1 the learner runs under torchrun as an
        FSDP2 data-parallel job (sharded/); on AWS the environment's `learner.gpus` (x nodes) decides.
    cpu_offload (False): sharded learner only: parameters, gradients and AdamW state in host memory, the
        optimizer step on the CPU (FSDP2 CPUOffloadPolicy); more host memory and time for less GPU memory.
    sft_data, sft_steps (100), sft_lr (1e-4), sft_batch_size (16): `trainer.sft`, an SFT warm start on
        chat demonstrations (cross-entropy on assistant tokens) before the first policy is published; set
        in a curriculum stage's overrides, it runs (once) before that stage's first batch trains.
    sft_lr_scheduler ("constant"), sft_min_lr_ratio (0.0): the SFT learning rate's schedule (cosine decay).
    sft_warmup_steps (0): linear learning-rate warmup from 0 over the first SFT steps (then the schedule).
    sft_context_warmup_steps (0), sft_context_warmup_tokens (32): sequence length warmup (arXiv:2108.06084):
        the first steps see each demonstration's context cut to its last tokens before the first assistant
        token; small models learn to copy from the prompt much sooner from short contexts.
    sft_context_warmup_schedule ("step"): "step" keeps sft_context_warmup_tokens for the whole warmup; "linear"
        grows the kept context from there to the longest demonstration's over the warmup steps.

    `model:` keys

    model_path: a Hugging Face model folder, or "tiny" for the built-in test model.
    dtype ("bf16"): compute dtype; bf16 is autocast over fp32 master weights where the device has bf16 units
        (a GPU; a CPU with AVX512-BF16 or AMX, detected at run time), fp32 elsewhere (train/precision.py).
    gradient_checkpointing (False): recompute layer activations in backward.
    lora_rank, lora_alpha, lora_dropout (0.0), lora_target_modules: LoRA through peft
        (arXiv:2106.09685); None rank = full fine-tuning. With LoRA the reference policy is the base
        without adapters and published weights are merged. lora_layers_to_transform (None: every layer): only
        these decoder layers get adapters (peft's layers_to_transform); the backward stops below the lowest.
    rollout_quantization ("none"): weight-only quantisation of the published bundle.
    rollout_quantization_block_size (32): weights per quantisation block (int8/int4); larger decodes faster on CPU.
    chat_template (None): Jinja text replacing the model's chat template (`model.chat_template`, resolved to its
        text when the run starts), so SFT demonstrations render as the rollouts do.

    `critic:` keys (PPO's separate value model; None critic_model_path = a value head on the policy's trunk)

    critic_model_path: its own decoder (Hub id, folder or tiny), sharing the policy's tokenizer.
    critic_lr (1e-5), critic_weight_decay (0.0), critic_grad_clip (1.0), critic_lr_warmup_steps (0): its own
        AdamW and a linear warm-up of its learning rate.
    critic_ppo_mini_batch_size, critic_ppo_epochs, critic_cliprange_value (None -> the actor's
        ppo_mini_batch_size, ppo_epochs and cliprange_value).
    critic_lora_rank, critic_lora_alpha, critic_lora_dropout, critic_lora_target_modules,
        critic_gradient_checkpointing: as the policy's.

    From `rollout:` / `logging:`: temperature (1.0, the behaviour log-probs are of logits / T),
    max_total_response_length (1024), tensorboard (True), wandb_project / wandb_entity (None).
    """

    # algorithm
    adv_estimator: str = "grpo"
    norm_adv_by_std_in_grpo: bool = True
    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.28
    clip_ratio_c: float | None = None
    importance_sampling_level: str = "token"
    loss_agg_mode: str | None = None
    loss_scale_factor: float | None = None
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.001
    kl_loss_type: str = "k3"
    use_kl_in_reward: bool = False
    kl_penalty: str = "k1"
    kl_coef: float = 0.001
    entropy_coeff: float = 0.0
    rollout_is: str = "token"
    rollout_is_mode: str = "truncate"
    rollout_is_threshold: float = 2.0
    filter_groups: bool = True
    refill_filtered_groups: bool = False
    max_num_gen_batches: int = 10
    gamma: float = 1.0
    lam: float = 1.0
    vf_coef: float = 0.5
    cliprange_value: float = 0.2
    # trainer
    batch_prompts: int = 8
    lr: float = 1e-6
    lr_scheduler: str = "constant"
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    ppo_epochs: int = 1
    ppo_mini_batch_size: int | None = None
    critic_warmup: int = 0
    micro_batch_tokens: int = 8192
    logprob_chunk_size: int = 2048
    max_steps: int | None = None
    max_staleness: int = 1
    publish_every: int = 1
    save_every: int = 10
    keep_checkpoints: int = 2
    seed: int = 0
    deterministic: bool = False
    num_gpus: int = 1
    cpu_offload: bool = False
    sft_data: str | None = None
    sft_steps: int = 100
    sft_lr: float = 1e-4
    sft_batch_size: int = 16
    sft_lr_scheduler: str = "constant"
    sft_min_lr_ratio: float = 0.0
    sft_warmup_steps: int = 0
    sft_context_warmup_steps: int = 0
    sft_context_warmup_tokens: int = 32
    sft_context_warmup_schedule: str = "step"
    # model
    model_path: str = "tiny"
    dtype: str = "bf16"
    gradient_checkpointing: bool = False
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_dropout: float = 0.0
    lora_target_modules: tuple[str, ...] = LORA_TARGET_MODULES
    lora_layers_to_transform: tuple[int, ...] | None = None
    rollout_quantization: str = "none"
    rollout_quantization_block_size: int = 32
    chat_template: str | None = None
    # critic
    critic_model_path: str | None = None
    critic_lr: float = 1e-5
    critic_weight_decay: float = 0.0
    critic_grad_clip: float = 1.0
    critic_lr_warmup_steps: int = 0
    critic_ppo_mini_batch_size: int | None = None
    critic_ppo_epochs: int | None = None
    critic_cliprange_value: float | None = None
    critic_lora_rank: int | None = None
    critic_lora_alpha: float | None = None
    critic_lora_dropout: float = 0.0
    critic_lora_target_modules: tuple[str, ...] = LORA_TARGET_MODULES
    critic_gradient_checkpointing: bool = False
    # rollout / logging
    temperature: float = 1.0
    max_total_response_length: int = 1024
    tensorboard: bool = True
    # `logging.progress_interval_s`: how often the warm start's progress is written to learner/warm-start.json.
    progress_interval_s: float = 2.0
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
        fields; `stage` applies that curriculum stage's `algorithm`/`trainer` overrides."""
        from .contracts import validate  # jsonschema is not needed to build a config by hand (bench/)

        validate("run-config", run_config)
        algorithm = dict(run_config.get("algorithm") or {})
        trainer = dict(run_config.get("trainer") or {})
        if stage is not None:
            stages = {s["name"]: s for s in run_config.get("stages") or []}
            if stage not in stages:
                raise ValueError(f"unknown stage {stage!r}; the run config has {sorted(stages) or 'none'}")
            overrides = stages[stage].get("overrides") or {}
            algorithm.update(overrides.get("algorithm") or {})
            trainer.update(overrides.get("trainer") or {})
        model = run_config["model"]
        rollout = run_config.get("rollout") or {}
        logging = run_config.get("logging") or {}
        names = {f.name for f in dataclasses.fields(cls)}
        kw: dict[str, Any] = {k: v for k, v in algorithm.items() if k in names}
        kw.update({k: v for k, v in trainer.items() if k in names})
        sft = trainer.get("sft")
        if sft:
            kw.update(
                sft_data=sft["data"],
                **{
                    f"sft_{k}": sft[k]
                    for k in (
                        "steps",
                        "lr",
                        "batch_size",
                        "lr_scheduler",
                        "min_lr_ratio",
                        "warmup_steps",
                        "context_warmup_steps",
                        "context_warmup_tokens",
                        "context_warmup_schedule",
                    )
                    if k in sft
                },
            )
        kw["model_path"] = model["path"]
        for k in (
            "dtype",
            "gradient_checkpointing",
            "rollout_quantization",
            "rollout_quantization_block_size",
            "chat_template",
        ):
            if k in model:
                kw[k] = model[k]
        lora = model.get("lora")
        if lora:
            kw.update(lora_rank=lora["rank"], lora_alpha=lora["alpha"], lora_dropout=lora.get("dropout", 0.0))
            if "target_modules" in lora:
                kw["lora_target_modules"] = tuple(lora["target_modules"])
            if "layers_to_transform" in lora:
                kw["lora_layers_to_transform"] = tuple(lora["layers_to_transform"])
        if "temperature" in rollout:
            kw["temperature"] = rollout["temperature"]
        mt = rollout.get("multi_turn") or {}
        if "max_total_response_length" in mt:
            kw["max_total_response_length"] = mt["max_total_response_length"]
        critic = run_config.get("critic")
        if critic:
            kw["critic_model_path"] = critic["model"]["path"]
            kw["critic_gradient_checkpointing"] = critic["model"].get("gradient_checkpointing", False)
            for k in ("lr", "weight_decay", "grad_clip", "lr_warmup_steps", "ppo_mini_batch_size", "ppo_epochs",
                      "cliprange_value"):  # fmt: skip
                if k in critic:
                    kw[f"critic_{k}"] = critic[k]
            clora = critic["model"].get("lora")
            if clora:
                kw.update(
                    critic_lora_rank=clora["rank"],
                    critic_lora_alpha=clora["alpha"],
                    critic_lora_dropout=clora.get("dropout", 0.0),
                )
                if "target_modules" in clora:
                    kw["critic_lora_target_modules"] = tuple(clora["target_modules"])
        kw["tensorboard"] = logging.get("tensorboard", True)
        if "progress_interval_s" in logging:
            kw["progress_interval_s"] = float(logging["progress_interval_s"])
        if logging.get("wandb"):
            kw.update(wandb_project=logging["wandb"]["project"], wandb_entity=logging["wandb"].get("entity"))
        return cls(**kw)

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
        """Curriculum stages whose overrides set `trainer.sft` (a stage that only inherits the run's
        `trainer.sft` has nothing of its own to train)."""
        return {
            s["name"]
            for s in run_config.get("stages") or []
            if ((s.get("overrides") or {}).get("trainer") or {}).get("sft")
        }

    def replace(self, **changes: Any) -> LearnerConfig:
        return dataclasses.replace(self, **changes)

"""One learner step: scored groups -> advantages -> packed micro-batches -> clipped-surrogate loss with
gradient accumulation -> one AdamW step per PPO mini-batch and epoch (a separate critic, when configured,
first takes its own). Returns the step's metrics."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from ..algos.kl import kl_k1, kl_penalty
from ..algos.policy_loss import policy_loss
from ..algos.rollout_is import rollout_is_weights
from ..algos.value_loss import value_loss
from ..config import LearnerConfig
from ..scored_group import ScoredGroup
from .batch import LearnerBatch
from .comm import LOCAL, Comm
from .critic import Critic
from .host_memory import release_free_pages
from .micro_step import BatchTokens, MicroStep, ValueTargets
from .minibatch import filtered_loss_norm, loss_totals, micro_aggregate, mini_batches
from .optim import build_optimizer, lr_at, set_lr
from .outcomes import batch_metrics, compute_advantages
from .packing import MicroBatch
from .policy import ForwardOut, Policy
from .timing import PhaseTimer

if TYPE_CHECKING:
    from .sft import Demonstrations

# Metrics that are partial sums of a batch-normalised loss (they add over micro-batches); the others are
# micro-batch means, weighted by the micro-batch's share of loss tokens.
_SUMMED = {"pg_loss", "kl_loss", "entropy_loss", "vf_loss"}

# Times a named phase of the step (a PhaseTimer's `phase`; on a GPU, nothing).
Phase = Callable[[str], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def _no_phase(_name: str) -> Iterator[None]:
    yield


class Trainer:
    """Holds the optimiser (and the separate critic, if any); `step` is one learner step on a batch of groups."""

    def __init__(
        self,
        cfg: LearnerConfig,
        policy: Policy,
        stage_cfgs: dict[str, LearnerConfig] | None = None,
        critic: Critic | None = None,
        comm: Comm = LOCAL,
    ) -> None:
        """comm: how the step is spread over processes (the sharded learner's, sharded/comm.py; else one)."""
        self.cfg = cfg
        self.comm = comm
        self.policy = policy
        # A group's samples share their prompt's hidden states (packing.py) off CUDA: on a CPU the learner is
        # compute-bound and prompts are most of a step's tokens (the quickstart: ~190 of ~225 a sample; its
        # step compute went from 0.96 s to 0.58 s, bench/embedded). On CUDA packed attention is varlen flash
        # attention, which takes no such mask; sharing there is not measured (no GPU was lent).
        self.share_prefix = policy.device.type != "cuda"
        # On a CPU, freed heap pages go back to the OS between the phases of a step (host_memory.py): the process's
        # resident memory then follows its live tensors.
        self.release_pages = policy.device.type == "cpu"
        self.critic = critic
        self.stage_cfgs = stage_cfgs or {}
        self.optimizer = build_optimizer(
            policy.named_trainable_parameters(), cfg.lr, cfg.weight_decay, (cfg.adam_beta1, cfg.adam_beta2)
        )
        self.params = [p for _, p in policy.named_trainable_parameters()]
        self.total_steps: int | None = cfg.max_steps
        self.step_count = 0  # learner steps done; the schedule's only state
        # Seconds by phase of the last step (`timing_s/pack`, `forward`, ...; CPU only): kept out of the step's
        # metrics, which are a function of the data alone.
        self.last_phases: dict[str, float] = {}
        # trainer.sft.ptx_coef's demonstrations (ModelWork attaches them when the coefficient is set).
        self.ptx: Demonstrations | None = None

    def config_for(self, batch: LearnerBatch) -> LearnerConfig:
        """The stage's config when the batch's first group names a stage with overrides."""
        stage = batch.stages[0] if batch.stages else None
        return self.stage_cfgs.get(stage, self.cfg) if stage else self.cfg

    def state_dict(self) -> dict[str, Any]:
        state = {
            "optimizer": self.optimizer.state_dict(),
            "step": self.step_count,
            "total_steps": self.total_steps,
        }
        if self.critic is not None:
            state["critic"] = self.critic.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.step_count = int(state["step"])
        if self.critic is not None and "critic" in state:
            self.critic.load_state_dict(state["critic"])

    # -- the step ---------------------------------------------------------------------------------------

    def step(self, groups: Sequence[ScoredGroup], policy_version: int) -> dict[str, float]:
        t0 = time.perf_counter()
        device = self.policy.device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        # Phases are timed on a CPU only: on a GPU the kernels are queued, and syncing per phase would cost.
        timer = PhaseTimer() if device.type != "cuda" else None
        phase = timer.phase if timer is not None else _no_phase
        with phase("pack"):
            batch = LearnerBatch.from_groups(groups, policy_version)
            cfg = self.config_for(batch)
            mbs = [
                mb.to(device)
                for mb in self.comm.micro_batches(
                    batch,
                    cfg.micro_batch_tokens,
                    share_prefix=self.share_prefix,
                    dedup=cfg.dedup_samples,
                    share_root=cfg.share_batch_prefix,
                )
            ]
        n_tok = batch.num_loss_tokens
        behavior = batch.behavior_logprobs.to(device)

        # pi_old is recomputed once when the batch is reused (several epochs or mini-batches) or when the
        # advantages need it (values for GAE, log-probs for a KL reward); otherwise it is the first forward.
        several = cfg.ppo_mini_batch_size is not None and cfg.ppo_mini_batch_size < len(batch.group_ids)
        need_old = cfg.ppo_epochs > 1 or several or cfg.adv_estimator == "gae" or cfg.use_kl_in_reward
        old_logprobs = old_values = ref_logprobs = None
        with phase("old_logprobs"):
            if need_old:
                old_logprobs, old_values = self._gather(
                    mbs,
                    n_tok,
                    lambda mb: self.policy.forward_old(mb, values=True, temperature=cfg.temperature),
                )
            if self.critic is not None:
                old_values = self.critic.old_values(mbs, n_tok)
            if cfg.needs_reference:
                ref_logprobs, _ = self._gather(
                    mbs, n_tok, lambda mb: (self.policy.reference_logprobs(mb, cfg.temperature), None)
                )

        advantages, returns, adv_metrics = compute_advantages(
            cfg, batch, old_logprobs, old_values, ref_logprobs, device=device
        )
        # The shared-trunk value head trains with the policy; a separate critic trains on its own, first.
        value_targets = None
        if cfg.adv_estimator == "gae" and self.policy.value_head is not None:
            if returns is None or old_values is None:
                raise ValueError("the value head's loss needs GAE's returns and the old values")
            value_targets = ValueTargets(returns, old_values)
        tokens = BatchTokens(advantages, behavior, old_logprobs, ref_logprobs, value_targets)
        critic_metrics: dict[str, float] = {}
        if self.critic is not None:
            if returns is None or old_values is None:
                raise ValueError("a critic trains on GAE's returns: set algorithm.adv_estimator to gae")
            with phase("critic"):
                critic_metrics = self.critic.update(cfg, batch, returns, old_values, self.step_count)
        # verl's critic warm-up: the first critic_warmup steps train the critic alone.
        train_actor = self.critic is None or self.step_count >= cfg.critic_warmup

        lr = lr_at(
            self.step_count,
            lr=cfg.lr,
            scheduler=cfg.lr_scheduler,
            warmup_steps=cfg.warmup_steps,
            total_steps=self.total_steps,
            min_lr_ratio=cfg.min_lr_ratio,
            decay_steps=cfg.decay_steps,
        )
        set_lr(self.optimizer, lr)
        ptx_mbs, ptx_tok = self._ptx_micro_batches(cfg, phase) if train_actor else ([], 0)
        # Metrics stay on the device until the step ends: a .item() per micro-batch would stall the GPU.
        sums: dict[str, Tensor] = {}
        grad_norms = []
        dropped_norm = filtered_loss_norm(cfg, len(batch.group_ids))
        for epoch in range(cfg.ppo_epochs if train_actor else 0):
            plans = mini_batches(
                batch, cfg.ppo_mini_batch_size, seed=cfg.seed, step=self.step_count, epoch=epoch
            )
            for seqs in plans:
                # One mini-batch (the default) trains on the packing already done, in its order.
                if len(plans) == 1:
                    mini = mbs
                else:
                    with phase("pack"):
                        mini = [
                            m.to(device)
                            for m in self.comm.micro_batches(
                                batch,
                                cfg.micro_batch_tokens,
                                seqs,
                                share_prefix=self.share_prefix,
                                dedup=cfg.dedup_samples,
                                share_root=cfg.share_batch_prefix,
                            )
                        ]
                m_tok, m_seqs = loss_totals(batch, seqs)
                scale = 1.0 / (cfg.ppo_epochs * len(plans))
                # The loss's normalisers: the kept groups', or (filter_groups_norm: batch) scaled up as if the
                # batch held all batch_prompts groups, the missing ones with zero advantage.
                norm_tok, norm_seqs = m_tok * dropped_norm, m_seqs * dropped_norm
                self.optimizer.zero_grad(set_to_none=True)
                for mb in mini:
                    loss_metrics = self._micro_step(MicroStep(cfg, mb, norm_tok, norm_seqs, tokens), phase)
                    w = mb.targets.shape[0] / max(1, m_tok)
                    for k, v in loss_metrics.items():
                        # A micro-batch without loss tokens (a rank's padding, sharded) adds nothing: its means
                        # are NaN.
                        part = v * ((1.0 if k in _SUMMED else w) * scale) if w else torch.zeros_like(v)
                        sums[k] = sums.get(k, 0.0) + part
                for mb in ptx_mbs:
                    nll = self._ptx_micro_step(cfg, mb, ptx_tok, phase)
                    sums["ptx_loss"] = sums.get("ptx_loss", 0.0) + nll * scale
                if m_tok or ptx_tok:
                    with phase("optimizer"):
                        self._release_pages()
                        grad_norms.append(self.comm.clip_grad_norm(self.params, cfg.grad_clip).detach())
                        self.optimizer.step()
        sums = self._sum_over_ranks(sums)
        self.step_count += 1
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the step's kernels are queued, not done, until here
        elapsed = time.perf_counter() - t0
        total_tokens = sum(batch.lengths)
        metrics = {
            **batch_metrics(batch, cfg.group_relative),
            **adv_metrics,
            **{k: float(v) for k, v in sums.items()},
            **critic_metrics,
            "lr": lr,
            "grad_norm": float(sum(grad_norms)) / len(grad_norms) if grad_norms else 0.0,
            "micro_batches": float(len(mbs)),
            "tokens": float(total_tokens),
            # The tokens the transformer ran on: fewer than `tokens` where a group's samples share their prompt
            # or repeat (packing.py), each counted once over all ranks.
            "packed_tokens": float(self.comm.all_sum(torch.tensor(float(sum(mb.num_tokens for mb in mbs))))),
            "loss_tokens": float(n_tok),
            "tokens_per_s": total_tokens * cfg.ppo_epochs / elapsed if elapsed > 0 else 0.0,
            "step_time_s": elapsed,
            "actor_updates": float(len(grad_norms)),
        }
        if timer is not None:
            self.last_phases = timer.take()
            self.last_phases.pop("timing_s/other")  # the caller accounts for the step's rest
        stage = batch.stages[0] if batch.stages else None
        if stage in self.stage_cfgs:
            # The curriculum stage whose config this step ran with, as its index in `stages` (a number, so
            # TensorBoard plots it; the stdio step line carries numbers only).
            metrics["stage_index"] = float(list(self.stage_cfgs).index(stage))
        if ref_logprobs is not None and old_logprobs is not None:
            metrics["ref_kl"] = float(kl_k1(old_logprobs, ref_logprobs).mean()) if n_tok else 0.0
        if device.type == "cuda":
            metrics["memory_gb"] = torch.cuda.max_memory_allocated(device) / 2**30
        return metrics

    def _sum_over_ranks(self, sums: dict[str, Tensor]) -> dict[str, Tensor]:
        """Each rank holds its micro-batches' shares of the metrics: one sum makes them the batch's."""
        if self.comm.size == 1 or not sums:
            return sums
        names = sorted(sums)
        total = self.comm.all_sum(torch.stack([torch.as_tensor(sums[k]).float() for k in names]))
        return dict(zip(names, total.unbind(0), strict=True))

    def _gather(
        self,
        mbs: list[MicroBatch],
        n_tok: int,
        fn: Callable[[MicroBatch], ForwardOut | tuple[Tensor, Tensor | None]],
    ) -> tuple[Tensor, Tensor | None]:
        """Run a no-grad forward over every micro-batch and scatter its per-token outputs to [N] (summed
        over ranks when sharded: each loss token is computed by exactly one of them)."""
        device = self.policy.device
        logprobs = torch.zeros(n_tok, device=device)
        values = None
        for mb in mbs:
            out = fn(mb)
            lp, v = (out.logprobs, out.values) if isinstance(out, ForwardOut) else out
            logprobs[mb.token_index] = lp
            if v is not None:
                values = torch.zeros(n_tok, device=device) if values is None else values
                values[mb.token_index] = v
        self.comm.after_no_grad()
        if self.comm.size > 1:
            logprobs = self.comm.all_sum(logprobs)
            values = self.comm.all_sum(values) if values is not None else None
        return logprobs, values

    def _ptx_micro_batches(self, cfg: LearnerConfig, phase: Phase) -> tuple[list[MicroBatch], int]:
        """This step's demonstrations for trainer.sft.ptx_coef, packed (none when the coefficient is 0)."""
        if not cfg.sft_ptx_coef:
            return [], 0
        if self.ptx is None:
            raise ValueError("trainer.sft.ptx_coef is set but the learner has no demonstrations for it")
        with phase("pack"):
            batch = LearnerBatch.from_groups([self.ptx.batch(self.step_count)], 0)
            mbs = self.comm.micro_batches(batch, cfg.micro_batch_tokens)
            return [mb.to(self.policy.device) for mb in mbs], batch.num_loss_tokens

    def _ptx_micro_step(self, cfg: LearnerConfig, mb: MicroBatch, n_tok: int, phase: Phase) -> Tensor:
        """Adds ptx_coef x this micro-batch's share of the demonstrations' token-mean cross-entropy (at
        temperature 1, as the warm start) to the gradients; returns the share, detached."""
        with phase("ptx"):
            self._release_pages()
            out = self.policy.forward(mb, entropy=False, temperature=1.0)
            nll = -out.logprobs.sum() / max(1, n_tok)
            (cfg.sft_ptx_coef * nll).backward()
        return nll.detach()

    def _release_pages(self) -> None:
        if self.release_pages:
            release_free_pages()

    def _micro_step(self, step: MicroStep, phase: Phase) -> dict[str, Tensor]:
        with phase("forward"):
            self._release_pages()
            loss, metrics, n = self._loss(step)
        if n or self.comm.size > 1:
            # Sharded, every rank runs every backward (its padding micro-batches give zero gradients): the
            # parameter gathers and gradient reductions are collectives.
            with phase("backward"):
                self._release_pages()
                loss.backward()
        return {k: v.detach() for k, v in metrics.items()}

    def _loss(self, step: MicroStep) -> tuple[Tensor, dict[str, Tensor], int]:
        cfg, mb, tokens = step.cfg, step.mb, step.tokens
        # The stage's temperature: the one its rollouts sampled at (their behaviour log-probs are at it).
        out = self.policy.forward(
            mb, entropy=True, values=tokens.values is not None, temperature=cfg.temperature
        )
        idx = mb.token_index
        n, b = idx.shape[0], mb.num_seqs
        mask = torch.ones(n, device=out.logprobs.device)
        old = tokens.old_logprobs[idx] if tokens.old_logprobs is not None else out.logprobs.detach()  # [n]
        is_weights, is_metrics = rollout_is_weights(
            old,
            tokens.behavior_logprobs[idx],
            mask,
            mb.local_seq_ids,
            b,
            level=cfg.rollout_is,
            mode=cfg.rollout_is_mode,
            threshold=cfg.rollout_is_threshold,
        )
        aggregate = micro_aggregate(cfg, mb, step.num_tokens, step.num_loss_seqs)
        kl = None
        if cfg.use_kl_loss:
            if tokens.ref_logprobs is None:
                raise ValueError("use_kl_loss needs the reference policy's log-probs")
            kl = kl_penalty(out.logprobs, tokens.ref_logprobs[idx], cfg.kl_loss_type)
        entropy = out.entropy if (out.entropy is None or cfg.entropy_coeff) else out.entropy.detach()
        loss, metrics = policy_loss(
            out.logprobs,
            old,
            tokens.advantages[idx],
            mask,
            mb.local_seq_ids,
            b,
            aggregate,
            clip_ratio_low=cfg.clip_ratio_low,
            clip_ratio_high=cfg.clip_ratio_high,
            clip_ratio_c=cfg.clip_ratio_c,
            importance_sampling_level=cfg.importance_sampling_level,
            is_weights=is_weights,
            kl=kl,
            kl_coef=cfg.kl_loss_coef,
            entropy=entropy,
            entropy_coeff=cfg.entropy_coeff,
        )
        if tokens.values is not None:
            if out.values is None:
                raise ValueError("GAE's value loss needs the policy's value head")
            vloss, vmetrics = value_loss(
                out.values,
                tokens.values.old_values[idx],
                tokens.values.returns[idx],
                mask,
                aggregate,
                cliprange_value=cfg.cliprange_value,
            )
            loss = loss + cfg.vf_coef * vloss
            metrics.update(vmetrics)
        metrics.update(is_metrics)
        return loss, metrics, n

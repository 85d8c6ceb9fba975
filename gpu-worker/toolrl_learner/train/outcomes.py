"""What a batch's outcomes become: per-token advantages (and value targets) from the rewards, with the KL shaping
of use_kl_in_reward, and the step's reward, length and finish metrics. Used by trainer.py's step."""

from __future__ import annotations

import torch
from torch import Tensor

from ..algos import advantages as adv_fns
from ..algos.kl import kl_penalty
from ..algos.segments import segment_sum
from ..config import LearnerConfig
from .batch import LearnerBatch


def compute_advantages(
    cfg: LearnerConfig,
    batch: LearnerBatch,
    old_logprobs: Tensor | None = None,
    old_values: Tensor | None = None,
    ref_logprobs: Tensor | None = None,
    *,
    device: torch.device | str = "cpu",
) -> tuple[Tensor, Tensor | None, dict[str, float]]:
    """Per-token advantages [N], value targets [N] (gae only) and metrics for the batch.

    use_kl_in_reward shapes the reward first (InstructGPT, arXiv:2203.02155), kl_t = kl_penalty(pi_old,
    pi_ref) per sampled token: token-level estimators (reinforce_pp, gae) get r_t - kl_coef * kl_t on
    every token (the outcome reward sits on the last one); outcome estimators (grpo, dr_grpo, rloo) get
    the sequence total r - kl_coef * sum_t kl_t before the group baseline.

    Outcome estimators work on episodes: an agent episode split into segments (batch.py) counts once in its
    group's baseline, with the KL of all its sequences, and each of its sequences gets its advantage.
    """
    n_seq = batch.num_seqs
    seq_ids = batch.seq_ids.to(device)  # [N]
    ones = torch.ones(batch.num_loss_tokens, device=device)  # [N] every loss token is sampled
    rewards = batch.rewards.to(device)  # [S]
    group_index = batch.group_index.to(device)  # [S]
    episodes = batch.episodes.to(device)  # [S]
    primary = batch.primaries.to(device)  # [E]
    token_rewards = adv_fns.outcome_token_rewards(rewards, ones, seq_ids)  # [N]
    episode_rewards = rewards[primary]  # [E]
    metrics: dict[str, float] = {}
    if cfg.use_kl_in_reward:
        if old_logprobs is None or ref_logprobs is None:
            raise ValueError("use_kl_in_reward needs the old and the reference log-probs")
        kl = kl_penalty(old_logprobs, ref_logprobs, cfg.kl_penalty)  # [N]
        token_rewards = token_rewards - cfg.kl_coef * kl  # [N]
        seq_kl = segment_sum(kl, seq_ids, n_seq)  # [S]
        episode_rewards = episode_rewards - cfg.kl_coef * segment_sum(
            seq_kl, episodes, primary.shape[0]
        )  # [E]
        metrics["kl_in_reward"] = float(kl.mean()) if kl.numel() else 0.0
    episode_groups = group_index[primary]  # [E]
    returns = None
    if cfg.adv_estimator == "grpo":
        ep_adv = adv_fns.grpo_advantages(
            episode_rewards, episode_groups, norm_by_std=cfg.norm_adv_by_std_in_grpo
        )  # [E]
        advantages = ep_adv[episodes][seq_ids]  # [N]
    elif cfg.adv_estimator == "dr_grpo":
        advantages = adv_fns.dr_grpo_advantages(episode_rewards, episode_groups)[episodes][seq_ids]
    elif cfg.adv_estimator == "rloo":
        advantages = adv_fns.rloo_advantages(episode_rewards, episode_groups)[episodes][seq_ids]
    elif cfg.adv_estimator == "reinforce_pp":
        advantages = adv_fns.reinforce_pp_advantages(token_rewards, ones, seq_ids, n_seq, gamma=cfg.gamma)
    elif cfg.adv_estimator == "gae":
        if old_values is None:
            raise ValueError("gae needs the old values (a critic, or a value head on the policy)")
        advantages, returns = adv_fns.gae_advantages(
            token_rewards, old_values, ones, seq_ids, n_seq, gamma=cfg.gamma, lam=cfg.lam
        )
    else:
        raise ValueError(f"unknown adv_estimator {cfg.adv_estimator!r}")
    if advantages.numel():
        metrics.update(
            adv_mean=float(advantages.mean()),
            adv_std=float(advantages.std()) if advantages.numel() > 1 else 0.0,
            adv_max=float(advantages.max()),
            adv_min=float(advantages.min()),
        )
    return advantages, returns, metrics


def batch_metrics(batch: LearnerBatch, group_relative: bool) -> dict[str, float]:
    """The step's metrics of what the batch holds: rewards and their components, lengths, staleness, tool calls,
    how episodes ended."""
    # Per episode (an agent episode's segments are not trajectories of their own); lengths per sequence.
    primary = batch.primaries
    r = batch.rewards[primary]
    groups = batch.group_index[primary]
    finish = [batch.finish_reasons[int(i)] for i in primary]
    resp = (batch.tok_offsets[1:] - batch.tok_offsets[:-1]).float()
    out = {
        "reward_mean": float(r.mean()),
        "reward_std": float(r.std()) if r.numel() > 1 else 0.0,
        "reward_max": float(r.max()),
        "reward_min": float(r.min()),
        "tool_calls_per_trajectory": float(batch.tool_calls[primary].mean()),
        "trajectories": float(primary.shape[0]),
        "response_length_mean": float(resp.mean()),
        "sequence_length_mean": sum(batch.lengths) / batch.num_seqs,
        "staleness_mean": float(batch.staleness.mean()),
        "staleness_max": float(batch.staleness.max()),
        # groups trained with no signal (all rewards equal, or one sample for a group-relative estimator):
        # only when filter_groups is off
        "no_signal_groups": float(
            sum(
                1
                for g in range(len(batch.group_ids))
                if not adv_fns.has_signal(r[groups == g].tolist(), group_relative)
            )
        ),
    }
    if batch.num_seqs > primary.shape[0]:
        # Agent episodes whose agent rewrote its history: the extra token sequences they trained on.
        out["agent_segments"] = float(batch.num_seqs - primary.shape[0])
    for name, values in batch.reward_components.items():
        values = values[primary]
        present = values[~values.isnan()]
        if present.numel():
            out[f"reward/{name}"] = float(present.mean())
    # Why episodes ended, as fractions of the step's trajectories: `finish/error` counts episodes the rollout
    # ended on a failure (a chat template that broke the token prefix, a prompt over the limit, an agent that
    # threw), `finish/timeout` agent episodes past their time, `finish/length` and
    # `finish/max_total_response_length` responses cut by the budgets.
    for reason in sorted(set(finish)):
        out[f"finish/{reason}"] = finish.count(reason) / len(finish)
    return out

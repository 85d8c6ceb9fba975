"""Advantage estimators, named as verl's `algorithm.adv_estimator`: grpo, dr_grpo, rloo (outcome
rewards, a baseline from the other samples of the same prompt), reinforce_pp (batch-normalised
returns) and gae (PPO with a value head).

Outcome estimators map sequence rewards [S] to sequence advantages [S]; token-level ones map packed
per-token rewards [N] to per-token advantages [N]. Masked tokens (prompt, tool results) carry no
advantage and are skipped by the recurrences: "the next token" means the next sampled one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from .segments import masked_whiten, segment_sum


def _group_stats(rewards: Tensor, group_ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-sample (group mean, group unbiased std, group size), each [S], in float64.

    float64 because a group whose rewards are all equal but not exactly representable (eight of 0.7) has a
    float32 std of ~6e-8, which against eps = 1e-6 still gives every sample A ~ 0.06 in GRPO; in float64
    the noise is ~1e-17. Callers cast their result back to the rewards' dtype.
    """
    r = rewards.to(torch.float64)
    _, inverse, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    n = counts.to(torch.float64)  # [Gn]
    sums = torch.zeros_like(n).index_add(0, inverse, r)  # [Gn]
    mean = sums / n  # [Gn]
    sq = torch.zeros_like(n).index_add(0, inverse, (r - mean[inverse]) ** 2)  # [Gn]
    std = (sq / (n - 1).clamp(min=1)).sqrt()  # [Gn]; 0 for a group of one
    return mean[inverse], std[inverse], n[inverse]  # [S] each


def has_signal(rewards: Sequence[float], group_relative: bool) -> bool:
    """Whether an estimator can get an advantage out of one group's rewards: False when they are all equal
    (DAPO's dynamic-sampling filter, arXiv:2503.14476), or for a single sample when the baseline is the group's
    (grpo, dr_grpo, rloo: a group of one has none). The session drops such groups (trainer.filter_groups) and the
    trainer counts those it trains anyway (`no_signal_groups`)."""
    if len(rewards) < 2:
        return not group_relative
    return max(rewards) - min(rewards) > 1e-9


def grpo_advantages(
    rewards: Tensor, group_ids: Tensor, *, norm_by_std: bool = True, eps: float = 1e-6
) -> Tensor:
    """GRPO (DeepSeekMath, arXiv:2402.03300): A_i = (r_i - mean_g(r)) / (std_g(r) + eps).

    std is the unbiased sample std (as torch.std, verl and TRL). A group of one, or one whose rewards
    are all equal, gets A = 0: it carries no signal.
    """
    mean, std, _ = _group_stats(rewards, group_ids)
    centred = rewards.to(torch.float64) - mean  # [S]
    return (centred / (std + eps) if norm_by_std else centred).to(rewards.dtype)  # [S]


def dr_grpo_advantages(rewards: Tensor, group_ids: Tensor) -> Tensor:
    """Dr. GRPO (arXiv:2503.20783): A_i = r_i - mean_g(r), no division by the std (which favours
    prompts that are too easy or too hard). Pair it with the constant-normaliser loss aggregation."""
    mean, _, _ = _group_stats(rewards, group_ids)
    return (rewards.to(torch.float64) - mean).to(rewards.dtype)  # [S]


def rloo_advantages(rewards: Tensor, group_ids: Tensor) -> Tensor:
    """RLOO (arXiv:2402.14740): A_i = r_i - 1/(G-1) sum_{j != i} r_j = G/(G-1) (r_i - mean_g(r)).

    A group of one has no leave-one-out baseline: A = 0.
    """
    mean, _, n = _group_stats(rewards, group_ids)
    scale = torch.where(n > 1, n / (n - 1).clamp(min=1), torch.zeros_like(n))  # [S]
    return (scale * (rewards.to(torch.float64) - mean)).to(rewards.dtype)  # [S]


def outcome_token_rewards(seq_rewards: Tensor, mask: Tensor, seq_ids: Tensor) -> Tensor:
    """Put each sequence's reward on its last sampled token, 0 elsewhere: [S] -> [N]."""
    n = mask.shape[0]
    positions = torch.arange(n, device=mask.device)
    masked_pos = torch.where(mask.bool(), positions, torch.full_like(positions, -1))  # [N]
    last = torch.full((seq_rewards.shape[0],), -1, dtype=torch.long, device=mask.device)
    last = last.scatter_reduce(0, seq_ids, masked_pos, reduce="amax")  # [S]
    out = torch.zeros(n, dtype=seq_rewards.dtype, device=mask.device)
    has = last >= 0
    out[last[has]] = seq_rewards[has]
    return out  # [N]


def _compact(mask: Tensor, seq_ids: Tensor, num_seqs: int) -> tuple[Tensor, Tensor, Tensor, int]:
    """Indices of the masked-in tokens laid out as a padded [S, L] grid in sequence order."""
    idx = torch.nonzero(mask.bool(), as_tuple=False).squeeze(-1)  # [M], ascending
    sid = seq_ids[idx]  # [M]
    order = torch.argsort(sid, stable=True)  # keeps token order within a sequence
    idx, sid = idx[order], sid[order]
    counts = segment_sum(torch.ones_like(sid, dtype=torch.long), sid, num_seqs)  # [S]
    starts = torch.cumsum(counts, 0) - counts  # [S]
    col = torch.arange(idx.shape[0], device=mask.device) - starts[sid]  # [M]
    width = int(counts.max().item()) if counts.numel() else 0
    return idx, sid, col, width


def _reverse_scan(x: Tensor, mask: Tensor, seq_ids: Tensor, num_seqs: int, decay: float) -> Tensor:
    """y_t = x_t + decay * y_{t+1}, per sequence over masked-in tokens (t+1 = next sampled token)."""
    idx, sid, col, width = _compact(mask, seq_ids, num_seqs)
    grid = torch.zeros(num_seqs, width + 1, dtype=x.dtype, device=x.device)  # [S, L+1], last column 0
    grid[sid, col] = x[idx]
    for t in range(width - 1, -1, -1):
        grid[:, t] = grid[:, t] + decay * grid[:, t + 1]
    out = torch.zeros_like(x)
    out[idx] = grid[sid, col]
    return out  # [N]


def reinforce_pp_advantages(
    token_rewards: Tensor, mask: Tensor, seq_ids: Tensor, num_seqs: int, *, gamma: float = 1.0
) -> Tensor:
    """REINFORCE++ (arXiv:2501.03262): G_t = sum_{k >= t} gamma^(k-t) r_k, then A = (G - mean) / std
    over every sampled token of the batch (global normalisation instead of a critic or group baseline).
    With an outcome reward, gamma = 1 and no KL penalty, G_t is the sequence's reward on every token."""
    returns = _reverse_scan(token_rewards * mask, mask, seq_ids, num_seqs, gamma)  # [N]
    return masked_whiten(returns, mask)  # [N]


def gae_advantages(
    token_rewards: Tensor,
    values: Tensor,
    mask: Tensor,
    seq_ids: Tensor,
    num_seqs: int,
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """GAE (arXiv:1506.02438) for PPO with a value head; returns (whitened advantages, returns).

    delta_t = r_t + gamma V_{t+1} - V_t  (V after the last sampled token is 0)
    A_t     = delta_t + gamma lam A_{t+1}
    R_t     = A_t + V_t                   (the value target)
    Advantages are then whitened over the batch's sampled tokens, as PPO implementations do.
    """
    idx, sid, col, width = _compact(mask, seq_ids, num_seqs)
    r = torch.zeros(num_seqs, width + 1, dtype=values.dtype, device=values.device)  # [S, L+1]
    v = torch.zeros_like(r)  # [S, L+1], V beyond the end = 0
    r[sid, col] = token_rewards[idx].to(values.dtype)
    v[sid, col] = values[idx]
    adv = torch.zeros_like(r)
    for t in range(width - 1, -1, -1):
        delta = r[:, t] + gamma * v[:, t + 1] - v[:, t]  # [S]
        adv[:, t] = delta + gamma * lam * adv[:, t + 1]  # [S]
    advantages = torch.zeros_like(values)
    advantages[idx] = adv[sid, col]
    returns = (advantages + values) * mask  # [N]
    return masked_whiten(advantages, mask), returns

"""A learner batch built from scored groups: the trajectories as token sequences, and their sampled
tokens (loss mask 1) laid out as one packed list of "loss tokens" that every per-token tensor indexes.

An agent episode whose agent rewrote its history carries its earlier token sequences as `segments`: each is a
sequence of its own here, right after its episode's trajectory, with the episode's reward. `episode_index` maps
every sequence to its episode and `primary_seqs` every episode to its trajectory's sequence, so outcome advantages
are computed once per episode (the group's baseline counts an episode once) and shared by its segments, as rLLM
broadcasts a trajectory's advantage to its steps.

Loss token k of sequence s is token p of that sequence (p >= 1): it is predicted by the hidden state at
p - 1. Prompt and tool-result tokens are inputs only; they never become loss tokens, so the vocabulary
projection runs on sampled tokens alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from ..scored_group import ScoredGroup, Segment, Trajectory

# The token-level fields every trained sequence has: a trajectory, or one of its agent episode's segments.
TokenSequence = Trajectory | Segment


def sequences_of(trajectory: Trajectory) -> list[TokenSequence]:
    """The token sequences of one trajectory: itself, then its agent episode's earlier segments (if any)."""
    return [trajectory, *(trajectory.get("segments") or [])]


if TYPE_CHECKING:
    from .versions import Lineage


def oldest_version(group: ScoredGroup) -> int | None:
    """The policy version of the group's oldest sampled token (None if it has none)."""
    versions = [
        v
        for t in group["trajectories"]
        for seq in sequences_of(t)
        for v, m in zip(seq["policyVersions"], seq["lossMask"], strict=True)
        if m == 1 and v >= 0
    ]
    return min(versions) if versions else None


def group_staleness(group: ScoredGroup, policy_version: int, lineage: Lineage | None = None) -> int:
    """How many versions behind `policy_version` the group's oldest sampled token is (0 if none); counted along
    `lineage` when a resume republished (versions.py)."""
    oldest = oldest_version(group)
    if oldest is None:
        return 0
    return lineage.staleness(oldest, policy_version) if lineage is not None else policy_version - oldest


def tool_calls(trajectory: Trajectory) -> int:
    return sum(len(turn.get("toolCalls") or []) for turn in trajectory.get("turns") or [])


@dataclass
class LearnerBatch:
    """S sequences from G groups; N loss tokens. All tensors on CPU until a micro-batch moves them."""

    token_ids: list[Tensor]  # S x [L_s] int64
    rewards: Tensor  # [S]
    group_index: Tensor  # [S] which group (0..G-1)
    group_ids: list[str]  # [G]
    stages: list[str | None]  # [G]
    loss_positions: list[Tensor]  # S x [n_s] positions p >= 1 in sequence s
    tok_offsets: Tensor  # [S+1] loss tokens of sequence s are [tok_offsets[s], tok_offsets[s+1])
    targets: Tensor  # [N] token ids
    behavior_logprobs: Tensor  # [N]
    seq_ids: Tensor  # [N] sequence of each loss token
    staleness: Tensor  # [G]
    tool_calls: Tensor  # [S]
    finish_reasons: list[str] = field(default_factory=list)  # [S] why each episode ended (eos, error, ...)
    reward_components: dict[str, Tensor] = field(default_factory=dict)  # name -> [S] (NaN where absent)
    episode_index: Tensor | None = None  # [S] the episode of each sequence; None: one sequence per episode
    primary_seqs: Tensor | None = None  # [E] each episode's trajectory sequence; None: every sequence

    @property
    def episodes(self) -> Tensor:
        """[S] the episode (0..E-1) each sequence belongs to."""
        return self.episode_index if self.episode_index is not None else torch.arange(self.num_seqs)

    @property
    def primaries(self) -> Tensor:
        """[E] the sequence of each episode's trajectory (its segments follow it)."""
        return self.primary_seqs if self.primary_seqs is not None else torch.arange(self.num_seqs)

    @property
    def num_seqs(self) -> int:
        return len(self.token_ids)

    @property
    def num_loss_tokens(self) -> int:
        return int(self.tok_offsets[-1])

    @property
    def lengths(self) -> list[int]:
        return [int(t.shape[0]) for t in self.token_ids]

    @classmethod
    def from_groups(cls, groups: Sequence[ScoredGroup], policy_version: int) -> LearnerBatch:
        token_ids, rewards, group_index, positions, targets, behavior, tcalls = [], [], [], [], [], [], []
        finish: list[str] = []
        comps: dict[str, list[float]] = {}
        episode_index: list[int] = []
        primary: list[int] = []
        n_seq = sum(len(sequences_of(t)) for g in groups for t in g["trajectories"])
        s = 0
        for gi, g in enumerate(groups):
            for t in g["trajectories"]:
                primary.append(s)
                for k, seq in enumerate(sequences_of(t)):
                    ids = torch.tensor(seq["tokenIds"], dtype=torch.long)
                    mask = torch.tensor(seq["lossMask"], dtype=torch.bool)
                    mask[0] = False  # nothing predicts the first token
                    pos = torch.nonzero(mask, as_tuple=False).squeeze(-1)
                    token_ids.append(ids)
                    positions.append(pos)
                    targets.append(ids[pos])
                    behavior.append(torch.tensor(seq["behaviorLogprobs"], dtype=torch.float32)[pos])
                    rewards.append(float(t["reward"]))  # a segment has its episode's reward
                    group_index.append(gi)
                    episode_index.append(len(primary) - 1)
                    # Per-episode facts are the trajectory's; a segment's entries are never read (metrics take
                    # the primaries).
                    tcalls.append(tool_calls(t) if k == 0 else 0)
                    finish.append(str(t.get("finishReason") or "unknown") if k == 0 else "segment")
                    if k == 0:
                        for name, value in (t.get("rewardComponents") or {}).items():
                            comps.setdefault(name, [float("nan")] * n_seq)[s] = float(value)
                    s += 1
        counts = torch.tensor([p.shape[0] for p in positions], dtype=torch.long)
        offsets = torch.zeros(len(positions) + 1, dtype=torch.long)
        offsets[1:] = torch.cumsum(counts, 0)
        return cls(
            token_ids=token_ids,
            rewards=torch.tensor(rewards, dtype=torch.float32),
            group_index=torch.tensor(group_index, dtype=torch.long),
            group_ids=[g["groupId"] for g in groups],
            stages=[g.get("stage") for g in groups],
            loss_positions=positions,
            tok_offsets=offsets,
            targets=torch.cat(targets) if targets else torch.zeros(0, dtype=torch.long),
            behavior_logprobs=torch.cat(behavior) if behavior else torch.zeros(0),
            seq_ids=torch.repeat_interleave(torch.arange(len(positions)), counts),
            staleness=torch.tensor([group_staleness(g, policy_version) for g in groups], dtype=torch.float32),
            tool_calls=torch.tensor(tcalls, dtype=torch.float32),
            finish_reasons=finish,
            reward_components={k: torch.tensor(v) for k, v in comps.items()},
            **(
                {
                    "episode_index": torch.tensor(episode_index, dtype=torch.long),
                    "primary_seqs": torch.tensor(primary, dtype=torch.long),
                }
                if len(primary) < s
                else {}
            ),
        )

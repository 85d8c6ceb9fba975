"""Sequence packing: sequences go into micro-batches by a token budget (first-fit decreasing, no
padding), each micro-batch one concatenated row with cu_seqlens so attention stays within a sequence.

With `share_prefix`, a group's samples are packed as one unit: the tokens they all begin with (the prompt, and
any first sampled tokens they share) once, then each sample's own remainder as a branch that attends to that
prefix and to itself (`MicroBatch.branch`, model/attention.py). Every hidden state, log-prob and gradient is the
one the separate sequences give (up to float rounding), for a fraction of the tokens: the quickstart's 8 samples
of a ~190-token prompt and ~35 tokens each are ~470 tokens instead of ~1,800.

With `dedup`, a sample whose tokens are all the same as an earlier sample of its group is not packed again: its
loss tokens read the hidden rows of that first copy (`Unit.copies`, `MicroBatch.pred_rows`), so the forward and
backward of the transformer run once for both, and so does the log-prob head (`MicroBatch.head_index`): the copies
read the first one's log-probs and keep their own advantages. Once a policy's entropy is low most groups hold such
copies: a real model's GRPO groups computed 26-33% fewer tokens (BENCHMARKS.md, bench/learner/dedup.py). The
log-probs are the same; the gradients are the same up to float rounding (two copies' contributions are summed
before the backward instead of after).

With `share_root` (`trainer.share_batch_prefix`, on top of `share_prefix`) the tokens every sequence packed begins
with (a system prompt with its tool schema, the same for every question) are a micro-batch's root: packed once at
its start (branch -2, model/attention.py) and seen by every unit after it, instead of once in every group's prefix.
The SmolLM2 example's prompts share 187 of their ~224 tokens, so a micro-batch of three groups packs the 187 once
instead of three times."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from .batch import LearnerBatch


def plan_micro_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Sequence indices per micro-batch, each summing to <= budget tokens (a longer sequence is alone).

    First-fit decreasing: within 11/9 of the optimal number of bins, deterministic, and fast enough for
    the few hundred sequences of a step.
    """
    if budget <= 0:
        raise ValueError(f"micro-batch token budget must be positive, got {budget}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    bins: list[list[int]] = []
    room: list[int] = []
    for i in order:
        n = lengths[i]
        for b, free in enumerate(room):
            if n <= free:
                bins[b].append(i)
                room[b] -= n
                break
        else:
            bins.append([i])
            room.append(budget - n)
    return [sorted(b) for b in bins]


# A group's samples share a prefix only if it is at least this long: below it, the unit's attention mask
# costs more than the few tokens it saves.
MIN_SHARED_PREFIX = 8


@dataclass(frozen=True)
class Unit:
    """One packed row: `seqs` sharing their first `prefix` tokens (prefix 0: one sequence on its own), and
    `copies`, (sample, one of `seqs` with the same tokens) pairs: samples that take no tokens of their own."""

    seqs: tuple[int, ...]
    prefix: int = 0
    copies: tuple[tuple[int, int], ...] = ()

    def length(self, lengths: list[int]) -> int:
        return self.prefix + sum(lengths[s] - self.prefix for s in self.seqs)


def _common_prefix(seqs: list[Tensor]) -> int:
    first = seqs[0]
    n = min(int(t.shape[0]) for t in seqs)
    same = torch.ones(n, dtype=torch.bool)
    for t in seqs[1:]:
        same &= t[:n] == first[:n]
    differs = torch.nonzero(~same)
    return int(differs[0]) if differs.numel() else n


def _first_copies(batch: LearnerBatch, members: list[int]) -> dict[int, list[int]]:
    """Each distinct token sequence among `members` (a group's samples): its first sample -> the later ones."""
    first: dict[bytes, int] = {}
    out: dict[int, list[int]] = {}
    for s in members:
        key = batch.token_ids[s].numpy().tobytes()
        if key in first:
            out[first[key]].append(s)
        else:
            first[key] = s
            out[s] = []
    return out


def plan_units(
    batch: LearnerBatch, seqs: list[int], budget: int, share_prefix: bool, dedup: bool = False
) -> list[Unit]:
    """The packed rows of sequences `seqs`: without sharing one per sequence; with it, each group's samples
    (at least two) under their common prefix, capped so every sample keeps a token of its own, in as few units
    of at most `budget` tokens as first-fit gives (a sample that does not fit even alone under the prefix
    becomes a unit on its own). With `dedup` a group's samples with the same tokens are packed once: the later
    ones are copies in the unit of the first."""
    if not share_prefix and not dedup:
        return [Unit((s,)) for s in seqs]
    by_group: dict[int, list[int]] = {}
    for s in seqs:
        by_group.setdefault(int(batch.group_index[s]), []).append(s)
    units: list[Unit] = []
    for members in by_group.values():
        if not dedup:
            units.extend(_group_units(batch, members, budget, share_prefix))
            continue
        copies = _first_copies(batch, members)
        for u in _group_units(batch, list(copies), budget, share_prefix):
            pairs = tuple((c, s) for s in u.seqs for c in copies[s])
            units.append(replace(u, copies=pairs) if pairs else u)
    return units


def _group_units(batch: LearnerBatch, members: list[int], budget: int, share_prefix: bool) -> list[Unit]:
    """The units of one group's samples `members` (plan_units)."""
    lengths = batch.lengths
    if not share_prefix:
        return [Unit((s,)) for s in members]
    units: list[Unit] = []
    prefix = 0
    if len(members) > 1:
        prefix = min(
            _common_prefix([batch.token_ids[s] for s in members]), min(lengths[s] for s in members) - 1
        )
    if prefix < MIN_SHARED_PREFIX:
        return [Unit((s,)) for s in members]
    open_units: list[list[int]] = []
    room: list[int] = []
    for s in sorted(members, key=lambda s: (-lengths[s], s)):
        own = lengths[s] - prefix
        if prefix + own > budget:
            units.append(Unit((s,)))
            continue
        for u, free in enumerate(room):
            if own <= free:
                open_units[u].append(s)
                room[u] -= own
                break
        else:
            open_units.append([s])
            room.append(budget - prefix - own)
    units.extend(Unit(tuple(sorted(u)), prefix) if len(u) > 1 else Unit((u[0],)) for u in open_units)
    return units


def batch_root(batch: LearnerBatch, seqs: list[int]) -> int:
    """The length of the prefix every sequence of `seqs` begins with, short of each one's last token (so every
    sequence keeps a token of its own); 0 when under MIN_SHARED_PREFIX."""
    if len(seqs) < 2:
        return 0
    root = min(_common_prefix([batch.token_ids[s] for s in seqs]), min(batch.lengths[s] for s in seqs) - 1)
    return root if root >= MIN_SHARED_PREFIX else 0


@dataclass
class MicroBatch:
    """One packed row. Loss tokens are those of `seq_index`, in order; `token_index` maps them to the batch."""

    input_ids: Tensor  # [T]
    position_ids: Tensor  # [T]
    cu_seqlens: Tensor  # [U+1] int32: the packed units (a sequence, or a shared prefix and its branches)
    max_seqlen: int
    seq_index: Tensor  # [B] batch sequence of each packed sequence
    pred_rows: Tensor  # [n] row of the hidden state that predicts each loss token
    targets: Tensor  # [n]
    token_index: Tensor  # [n] index into the batch's loss tokens
    local_seq_ids: Tensor  # [n] in [0, B)
    # [T] or None (no shared prefix): -1 for a token every token after it in its unit sees (a shared prefix, a
    # lone sequence), k >= 0 for branch k of its unit, seen only by that branch; -2 for the root (the first unit,
    # with share_root): seen by every token of the micro-batch.
    branch: Tensor | None = None
    # With copies (deduplication): the distinct (hidden row, target) pairs among the loss tokens, and for each
    # loss token its pair. A copy's loss token reads the same hidden row and predicts the same token as the first
    # sample's, so its log-prob (and entropy) is the same number: the head runs once a pair and the copies
    # read the result (gathering sums their gradients before the head's backward). None without copies.
    head_rows: Tensor | None = None
    head_targets: Tensor | None = None
    head_index: Tensor | None = None

    def head_inputs(self) -> tuple[Tensor, Tensor, Tensor | None]:
        """The hidden rows and targets the log-prob head runs on, and the gather that gives every loss token its
        result (None: one row a loss token, no copies)."""
        if self.head_rows is None or self.head_targets is None or self.head_index is None:
            return self.pred_rows, self.targets, None
        return self.head_rows, self.head_targets, self.head_index

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def num_seqs(self) -> int:
        return int(self.seq_index.shape[0])

    def to(self, device: torch.device | str) -> MicroBatch:
        moved = {k: v.to(device, non_blocking=True) for k, v in vars(self).items() if isinstance(v, Tensor)}
        return replace(self, **moved)


def build_micro_batch(batch: LearnerBatch, units: list[Unit] | list[int], root: int = 0) -> MicroBatch:
    """One packed row of `units` (plain sequence indices: each on its own). With `root` > 0 the row begins with
    the first `root` tokens, which every sequence of the units begins with, once (the root, branch -2); each unit
    then holds only its tokens after them."""
    units = [u if isinstance(u, Unit) else Unit((u,)) for u in units]
    ids, pos, branch, rows, tok, local, seq_index = [], [], [], [], [], [], []
    cu = [0]
    shared = root > 0 or any(u.prefix > 0 for u in units)
    if root:
        ids.append(batch.token_ids[units[0].seqs[0]][:root])
        pos.append(torch.arange(root))
        branch.append(torch.full((root,), -2, dtype=torch.long))
        cu.append(root)
    for u in units:
        start = cu[-1]
        at = start
        own_from = max(u.prefix, root)  # a sample's own tokens start here
        if u.prefix > root:
            ids.append(batch.token_ids[u.seqs[0]][root : u.prefix])
            pos.append(torch.arange(root, u.prefix))
            branch.append(torch.full((u.prefix - root,), -1, dtype=torch.long))
            at += u.prefix - root
        own_start: dict[int, int] = {}  # a packed sample -> the row of its first own token
        for b, s in enumerate(u.seqs):
            own = batch.token_ids[s][own_from:]
            n = own.shape[0]
            ids.append(own)
            pos.append(torch.arange(own_from, own_from + n))
            branch.append(torch.full((n,), b if u.prefix else -1, dtype=torch.long))
            own_start[s] = at
            at += n
        # Each sample's loss tokens, then its copies': loss token p is predicted by hidden row p - 1, in the root,
        # in the shared prefix or in the own tokens of the sample packed (for a copy, the first sample with its
        # tokens).
        for s, packed in [*((s, s) for s in u.seqs), *u.copies]:
            before = batch.loss_positions[s] - 1
            row = torch.where(before < own_from, start + before - root, own_start[packed] + before - own_from)
            rows.append(torch.where(before < root, before, row))
            lo, hi = int(batch.tok_offsets[s]), int(batch.tok_offsets[s + 1])
            tok.append(torch.arange(lo, hi))
            local.append(torch.full((hi - lo,), len(seq_index), dtype=torch.long))
            seq_index.append(s)
        cu.append(at)
    token_index = torch.cat(tok)
    pred_rows, targets = torch.cat(rows), batch.targets[token_index]
    head: dict[str, Tensor] = {}
    if any(u.copies for u in units):
        # rows < T and targets < vocabulary, so one int64 key a pair; sorted distinct keys, and each token's.
        width = int(targets.max()) + 1 if targets.numel() else 1
        keys, head_index = torch.unique(pred_rows * width + targets, return_inverse=True)
        head = {"head_rows": keys // width, "head_targets": keys % width, "head_index": head_index}
    return MicroBatch(
        input_ids=torch.cat(ids),
        position_ids=torch.cat(pos),
        cu_seqlens=torch.tensor(cu, dtype=torch.int32),
        max_seqlen=max(b - a for a, b in zip(cu[:-1], cu[1:], strict=True)),
        seq_index=torch.tensor(seq_index, dtype=torch.long),
        pred_rows=pred_rows,
        targets=targets,
        token_index=token_index,
        local_seq_ids=torch.cat(local),
        branch=torch.cat(branch) if shared else None,
        **head,
    )


def pack_batch(
    batch: LearnerBatch,
    budget: int,
    share_prefix: bool = False,
    dedup: bool = False,
    share_root: bool = False,
) -> list[MicroBatch]:
    return pack_sequences(batch, list(range(batch.num_seqs)), budget, share_prefix, dedup, share_root)


def pack_sequences(
    batch: LearnerBatch,
    seqs: list[int],
    budget: int,
    share_prefix: bool = False,
    dedup: bool = False,
    share_root: bool = False,
) -> list[MicroBatch]:
    """Micro-batches of some of the batch's sequences (a PPO mini-batch, or all of them). With `share_root` (and
    `share_prefix`) each micro-batch packs the prefix all of `seqs` begin with once, and its units after it."""
    units = plan_units(batch, seqs, budget, share_prefix, dedup)
    lengths = batch.lengths
    root = batch_root(batch, seqs) if share_prefix and share_root else 0
    if root >= budget:
        root = 0
    plan = plan_micro_batches([u.length(lengths) - root for u in units], budget - root)
    return [build_micro_batch(batch, [units[i] for i in b], root) for b in plan]

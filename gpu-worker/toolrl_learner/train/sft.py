"""SFT mode: cross-entropy on chat demonstrations, on the assistant tokens only, for warm starts and
format stages (`trainer.sft`). Demonstrations are JSONL `{"messages": [...], "tools"?: [...]}` or
Parquet rows with a `messages` (or `prompt`) column, tokenised with the model folder's tokenizer and
chat template (transformers)."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import torch

from ..config import LearnerConfig
from ..scored_group import ScoredGroup, Trajectory
from ..storage import BlobNotFound, BlobStore
from .batch import LearnerBatch
from .comm import LOCAL, Comm
from .optim import build_optimizer, lr_at, set_lr
from .policy import Policy

log = logging.getLogger(__name__)


def _as_messages(value: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, list) or not all(isinstance(m, dict) and "role" in m for m in value):
        raise ValueError(f"{where}: messages must be a list of {{role, content}} objects")
    if not any(m["role"] == "assistant" for m in value):
        raise ValueError(f"{where}: no assistant message to learn from")
    return [{k: v for k, v in m.items() if v is not None} for m in value]


def load_demonstrations(path: Path) -> list[dict[str, Any]]:
    """[{"messages": [...], "tools": [...] | None}] from a .jsonl/.json or .parquet file."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    elif path.suffix in (".jsonl", ".json"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    else:
        raise ValueError(f"{path}: SFT data must be .jsonl or .parquet")
    out = []
    for i, row in enumerate(rows):
        where = f"{path.name} row {i}"
        col = (
            "messages"
            if row.get("messages") is not None
            else "prompt"
            if row.get("prompt") is not None
            else None
        )
        if col is None:
            raise ValueError(f"{where}: needs a `messages` (or `prompt`) column")
        tools = row.get("tools")
        if isinstance(tools, str):
            tools = json.loads(tools)
        out.append({"messages": _as_messages(row[col], where), "tools": tools or None})
    if not out:
        raise ValueError(f"{path}: no demonstrations")
    return out


def tokenize_demonstration(
    tokenizer, example: dict[str, Any], where: str = ""
) -> tuple[list[int], list[int]]:
    """(token ids, loss mask) with 1 on the tokens of every assistant message (its end-of-turn included).

    Assistant spans are found by rendering the conversation up to each message: the text before it (with
    the generation prompt) and through it must both be prefixes of the whole rendering.
    """
    msgs, tools = example["messages"], example.get("tools")

    def render(m, gen=False):
        return tokenizer.apply_chat_template(m, tools=tools, tokenize=False, add_generation_prompt=gen)

    full = render(msgs)
    spans = []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        before, through = render(msgs[:i], gen=True), render(msgs[: i + 1])
        if not (full.startswith(before) and full.startswith(through)):
            raise ValueError(
                f"{where}: the chat template renders message {i} differently in context; "
                "cannot find the assistant tokens"
            )
        spans.append((len(before), len(through)))
    enc = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    mask = [int(any(s <= a < e for s, e in spans)) for a, _ in enc["offset_mapping"]]
    return ids, mask


def _as_group(step: int, sequences: list[tuple[list[int], list[int]]]) -> ScoredGroup:
    """Demonstrations as a scored group, so the policy's packed forward (LearnerBatch) takes them as they are."""
    trajectories: list[Trajectory] = [
        {
            "sampleIndex": i,
            "tokenIds": ids,
            "promptLength": mask.index(1) if 1 in mask else len(mask),
            "lossMask": mask,
            "behaviorLogprobs": [0.0] * len(ids),
            "policyVersions": [0] * len(ids),
            "finishReason": "eos",
            "turns": [],
            "messages": [],
            "reward": 0.0,
            "rewardComponents": {},
        }
        for i, (ids, mask) in enumerate(sequences)
    ]
    return {
        "schemaVersion": 1,
        "runId": "sft",
        "groupId": f"sft-{step}",
        "promptId": f"sft-{step}",
        "epoch": 0,
        "dataSource": "sft",
        "trajectories": trajectories,
    }


def local_sft_data(store: BlobStore, key: str, workdir: Path, where: str = "trainer.sft.data") -> Path:
    """`trainer.sft.data` as a local file: a path on this machine, the folder store's file, or a download."""
    path = Path(key)
    if path.is_file():
        return path
    local = store.local_path(key)
    if local is not None and Path(local).is_file():
        return Path(local)
    path = Path(workdir) / "sft" / Path(key).name
    try:
        store.get_file(key, path)
    except BlobNotFound:
        raise FileNotFoundError(
            f"{where} {key!r}: neither a file on this machine nor an object in {store.describe}"
        ) from None
    return path


def cut_context(ids: list[int], mask: list[int], keep: int) -> tuple[list[int], list[int]]:
    """The demonstration from `keep` tokens before its first loss token on (loss tokens are never cut)."""
    first = mask.index(1) if 1 in mask else len(mask)
    start = max(0, first - keep)
    return ids[start:], mask[start:]


def warmup_keep(step: int, cfg: LearnerConfig, longest: int) -> int | None:
    """Context tokens kept before the first loss token at `step` (1-based); None: the whole context."""
    warm = cfg.sft_context_warmup_steps
    if step > warm:
        return None
    tokens = cfg.sft_context_warmup_tokens
    if cfg.sft_context_warmup_schedule == "linear":
        return tokens + max(0, longest - tokens) * (step - 1) // warm
    return tokens


def tokenized_demonstrations(
    model_dir: Path, chat_template: str | None, data_path: Path
) -> list[tuple[list[int], list[int]]]:
    """Every demonstration of the file as (token ids, loss mask), rendered by the model's tokenizer with
    `model.chat_template` when set (as the rollouts render)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return [
        tokenize_demonstration(tokenizer, ex, f"{Path(data_path).name} row {i}")
        for i, ex in enumerate(load_demonstrations(data_path))
    ]


class Demonstrations:
    """`trainer.sft.ptx_coef`'s demonstrations, one batch per learner step. A step's batch is drawn from the
    run's seed and the step number alone (no state), so a resumed run trains on the same ones."""

    def __init__(self, data: list[tuple[list[int], list[int]]], batch_size: int, seed: int) -> None:
        if not data:
            raise ValueError("trainer.sft.ptx_coef: no demonstrations")
        self.data, self.batch_size, self.seed = data, batch_size, seed

    def batch(self, step: int) -> ScoredGroup:
        """Learner step `step`'s (0-based) demonstrations: batch_size of them, without repeats while the file has
        enough, as one group."""
        # The CPU generator keeps 32 bits of its seed: the pair hashed into 32.
        key = hashlib.sha256(f"ptx:{self.seed}:{step}".encode()).digest()
        gen = torch.Generator().manual_seed(int.from_bytes(key[:4], "little"))
        order = torch.randperm(len(self.data), generator=gen).tolist()
        return _as_group(step, [self.data[order[i % len(order)]] for i in range(self.batch_size)])


def ptx_demonstrations(policy: Policy, cfg: LearnerConfig, store: BlobStore, workdir: Path) -> Demonstrations:
    """The demonstrations of `trainer.sft.ptx_data` (else `trainer.sft.data`), tokenized."""
    key = cfg.sft_ptx_data or cfg.sft_data
    if key is None:
        raise ValueError(
            "trainer.sft.ptx_coef: no demonstrations (set trainer.sft.ptx_data or trainer.sft.data)"
        )
    where = "trainer.sft.ptx_data" if cfg.sft_ptx_data else "trainer.sft.data"
    path = local_sft_data(store, key, workdir, where)
    data = tokenized_demonstrations(policy.model_dir, cfg.chat_template, path)
    return Demonstrations(data, cfg.sft_ptx_batch_size or cfg.sft_batch_size, cfg.seed)


def run_sft(
    policy: Policy, cfg: LearnerConfig, data_path: Path, on_step=None, comm: Comm = LOCAL
) -> list[dict[str, float]]:
    """cfg.sft_steps AdamW steps of cfg.sft_batch_size demonstrations each (a shuffle seeded by cfg.sft_seed, else
    cfg.seed; cycling); during the first cfg.sft_context_warmup_steps, each demonstration's context is cut
    (sequence length warmup).

    comm: sharded, every rank draws the same batches and trains its share of each one's micro-batches."""
    data = tokenized_demonstrations(policy.model_dir, cfg.chat_template, data_path)
    longest = max((mask.index(1) if 1 in mask else len(mask)) for _, mask in data)
    optimizer = build_optimizer(policy.named_trainable_parameters(), cfg.sft_lr, cfg.weight_decay)
    params = [p for _, p in policy.named_trainable_parameters()]
    gen = torch.Generator().manual_seed(cfg.seed if cfg.sft_seed is None else cfg.sft_seed)
    order: list[int] = []
    history = []
    # trainer.share_batch_prefix: the beginning every demonstration of a batch shares (a system prompt) once a
    # micro-batch; off, the demonstrations are packed as they always were (each on its own), bit for bit.
    share = cfg.share_batch_prefix and policy.device.type != "cuda"
    for step in range(1, cfg.sft_steps + 1):
        t0 = time.perf_counter()
        picked = []
        keep = warmup_keep(step, cfg, longest)
        while len(picked) < cfg.sft_batch_size:
            if not order:
                order = torch.randperm(len(data), generator=gen).tolist()
            ids, mask = data[order.pop()]
            picked.append(cut_context(ids, mask, keep) if keep is not None else (ids, mask))
        lr = lr_at(
            step - 1,
            lr=cfg.sft_lr,
            scheduler=cfg.sft_lr_scheduler,
            warmup_steps=cfg.sft_warmup_steps,
            total_steps=cfg.sft_steps,
            min_lr_ratio=cfg.sft_min_lr_ratio,
            decay_steps=cfg.sft_decay_steps,
        )
        set_lr(optimizer, lr)
        batch = LearnerBatch.from_groups([_as_group(step, picked)], 0)
        n_tok = max(1, batch.num_loss_tokens)
        optimizer.zero_grad(set_to_none=True)
        total = torch.zeros((), device=policy.device)
        for mb in comm.micro_batches(batch, cfg.micro_batch_tokens, share_prefix=share, share_root=share):
            out = policy.forward(mb.to(policy.device), entropy=False, temperature=1.0)
            loss = -out.logprobs.sum() / n_tok  # token-mean cross-entropy over the whole batch
            loss.backward()
            total += loss.detach()
        grad_norm = float(comm.clip_grad_norm(params, cfg.grad_clip))
        optimizer.step()
        m = {
            "sft_step": step,
            "sft_loss": float(comm.all_sum(total)),
            "grad_norm": grad_norm,
            "lr": lr,
            "step_time_s": time.perf_counter() - t0,
        }
        history.append(m)
        if on_step is not None:
            on_step(m)
    return history

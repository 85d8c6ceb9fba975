"""The CPU learner hands freed heap pages back to the OS between the phases of a step (train/host_memory.py)."""

from __future__ import annotations

import ctypes
import os
import sys

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train import host_memory
from toolrl_learner.train import trainer as trainer_module
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import random_group
from toolrl_learner.train.trainer import Trainer


def _glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL("libc.so.6"), "gnu_get_libc_version")
    except OSError:
        return False


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(
    not _glibc() or "MALLOC_MMAP_THRESHOLD_" in os.environ,
    reason="malloc_trim is glibc's; a fixed mmap threshold keeps these blocks off the heap",
)
def test_freed_heap_pages_leave_the_resident_memory_on_cpu():
    # After a 16 MB block is freed glibc serves blocks below that size from its heap and keeps their pages when
    # they are freed: 64 blocks of 4 MB freed behind one that stays alive stay resident until handed back.
    big = torch.ones(4 * 2**20)  # 16 MB, mmapped; its free raises the threshold (to at most 32 MB)
    del big
    blocks = [torch.ones(2**20) for _ in range(64)]  # 4 MB each, from the heap, pages touched
    keep = torch.ones(2**20)  # allocated last: the heap cannot shrink from its top
    del blocks
    before = _rss()
    assert host_memory.release_free_pages()
    after = _rss()
    assert before - after > 128 * 2**20, f"resident {before / 2**20:.0f} MB -> {after / 2**20:.0f} MB"
    assert float(keep[0]) == 1.0


def test_the_step_releases_pages_before_each_forward_backward_and_optimizer_step_on_cpu(
    tmp_path, monkeypatch
):
    model = build_tiny(tmp_path / "tiny", TinySpec(hidden_size=32, num_layers=1, num_heads=2))
    cfg = LearnerConfig(model_path=str(model), dtype="fp32", micro_batch_tokens=64)
    trainer = Trainer(cfg, Policy(cfg, model, torch.device("cpu")))
    assert trainer.release_pages
    calls = []
    phases = []
    monkeypatch.setattr(trainer_module, "release_free_pages", lambda: calls.append(len(phases)) or True)
    forward, backward = trainer.policy.forward, torch.Tensor.backward

    def on_forward(*a, **k):
        phases.append("forward")
        return forward(*a, **k)

    def on_backward(self, *a, **k):
        phases.append("backward")
        return backward(self, *a, **k)

    step = trainer.optimizer.step

    def on_step(*a, **k):
        phases.append("optimizer")
        return step(*a, **k)

    monkeypatch.setattr(trainer.policy, "forward", on_forward)
    monkeypatch.setattr(torch.Tensor, "backward", on_backward)
    monkeypatch.setattr(trainer.optimizer, "step", on_step)
    groups = [
        random_group("r", f"e0-p{i}", vocab=900, g=4, response_len=12, tool_len=5, seed=i) for i in range(2)
    ]
    metrics = trainer.step(groups, 0)
    assert metrics["micro_batches"] > 1
    assert phases.count("forward") == metrics["micro_batches"] and phases.count("optimizer") == 1
    # one release right before every phase: each call came when the phases so far were all done
    assert calls == list(range(len(phases)))

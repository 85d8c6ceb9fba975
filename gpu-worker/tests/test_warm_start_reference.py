"""After a warm start the KL term's reference is the warm-started policy (as when a verl run starts from an SFT
checkpoint), with LoRA and with full fine-tuning; checkpoints hold that reference and a resumed run gets it back."""

import json

import pytest
import torch
from demos import DEMO

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.checkpoint import REFERENCE, TrainerState, load_latest_checkpoint, save_checkpoint
from toolrl_learner.train.packing import pack_batch
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import random_group
from toolrl_learner.train.trainer import Trainer

LORA = dict(lora_rank=4, lora_alpha=8.0)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


def _cfg(tiny_dir, lora: bool, **kw):
    return LearnerConfig(
        model_path=str(tiny_dir), dtype="fp32", lr=1e-2, use_kl_loss=True, **(LORA if lora else {}), **kw
    )


def _groups():
    return [
        random_group("r", f"e0-p{i}", vocab=900, g=4, response_len=8, tool_len=4, seed=i) for i in range(2)
    ]


def _mb():
    (mb,) = pack_batch(LearnerBatch.from_groups(_groups(), 0), 4096)
    return mb


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_the_reference_is_the_policy_when_the_warm_start_ended_on_cpu(tiny_dir, lora):
    policy = Policy(_cfg(tiny_dir, lora), tiny_dir, torch.device("cpu"))
    trainer = Trainer(policy.cfg, policy)
    mb = _mb()
    initial = policy.reference_logprobs(mb)
    trainer.step(_groups(), 0)  # stands in for the warm start: the weights leave the initial model
    warm = policy.forward_old(mb).logprobs
    assert (warm - initial).abs().max() > 1e-3
    torch.testing.assert_close(policy.reference_logprobs(mb), initial, rtol=0, atol=0)  # not yet moved

    policy.reference_from_current()
    assert policy.warm_start_reference
    torch.testing.assert_close(policy.reference_logprobs(mb), warm, rtol=0, atol=0)
    first, second = trainer.step(_groups(), 0), trainer.step(_groups(), 0)
    assert first["kl_loss"] == 0.0 and second["kl_loss"] > 0  # the first RL step starts at the reference
    trained = policy.forward_old(mb).logprobs
    assert (trained - warm).abs().max() > 1e-3
    # the reference stayed where the warm start ended, and reading it left the trained weights as they were
    torch.testing.assert_close(policy.reference_logprobs(mb), warm, rtol=0, atol=0)
    torch.testing.assert_close(policy.forward_old(mb).logprobs, trained, rtol=0, atol=0)


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_a_checkpoint_holds_the_warm_started_reference_on_cpu(tiny_dir, tmp_path, lora):
    cfg = _cfg(tiny_dir, lora)
    store = FolderBlobStore(tmp_path)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    trainer = Trainer(cfg, policy)
    trainer.step(_groups(), 0)
    policy.reference_from_current()
    trainer.step(_groups(), 0)
    save_checkpoint(store, "r", policy, trainer.state_dict(), TrainerState(step=1), tmp_path)
    assert store.exists(f"runs/r/checkpoints/step-1/{REFERENCE}")

    mb = _mb()
    fresh = Policy(cfg, tiny_dir, torch.device("cpu"))
    load_latest_checkpoint(store, "r", fresh, tmp_path)
    assert fresh.warm_start_reference
    torch.testing.assert_close(fresh.reference_logprobs(mb), policy.reference_logprobs(mb), rtol=0, atol=0)
    torch.testing.assert_close(
        fresh.forward_old(mb).logprobs, policy.forward_old(mb).logprobs, rtol=0, atol=0
    )

    # a run without a warm start keeps the initial model as its reference and saves no copy of it
    plain = Policy(cfg, tiny_dir, torch.device("cpu"))
    Trainer(cfg, plain).step(_groups(), 0)
    save_checkpoint(store, "p", plain, None, TrainerState(step=1), tmp_path)
    assert not plain.warm_start_reference and not store.exists(f"runs/p/checkpoints/step-1/{REFERENCE}")


def test_the_session_warm_start_sets_the_reference_and_a_restart_restores_it_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    store.put_bytes("runs/r/input/sft.jsonl", (json.dumps(DEMO) + "\n").encode())
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32", "lora": {"rank": 4, "alpha": 8}},
        "data": {"train": "t.parquet"},
        "algorithm": {"use_kl_loss": True},
        "trainer": {"sft": {"data": "runs/r/input/sft.jsonl", "steps": 2, "batch_size": 1, "lr": 1e-2}},
        "logging": {"tensorboard": False},
    }
    store.put_bytes(
        "runs/r/run.json", json.dumps({"config": config, "totals": {"groupsPlanned": 10}}).encode()
    )
    mb = _mb()
    s = LearnerSession(store, "r", emit=lambda _: None, device="cpu")
    s.start()
    policy = s.model.policy
    assert policy.warm_start_reference
    torch.testing.assert_close(policy.reference_logprobs(mb), policy.forward_old(mb).logprobs, rtol=0, atol=0)
    with policy.peft.disable_adapter():
        base = policy.forward_old(mb).logprobs
    assert (base - policy.reference_logprobs(mb)).abs().max() > 1e-4  # the warm start moved the policy

    s2 = LearnerSession(store, "r", emit=lambda _: None, device="cpu")
    s2.start()  # resumes from the step-0 checkpoint, without redoing the warm start
    torch.testing.assert_close(
        s2.model.policy.reference_logprobs(mb), policy.reference_logprobs(mb), rtol=0, atol=0
    )

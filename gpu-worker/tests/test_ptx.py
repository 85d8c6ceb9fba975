"""trainer.sft.ptx_coef: demonstrations trained on during RL (InstructGPT's PPO-ptx). Each learner step draws its
batch from the seed and the step alone; the term adds ptx_coef x the demonstrations' cross-entropy to every actor
update, so a step whose groups carry no signal still moves the policy toward the demonstrations."""

import dataclasses
import json

import pytest
import torch
from demos import calculator_demo
from transformers import AutoTokenizer

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.model_work import attach_ptx
from toolrl_learner.train.packing import pack_batch
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.sft import Demonstrations, tokenize_demonstration
from toolrl_learner.train.synthetic import group, trajectory
from toolrl_learner.train.trainer import Trainer


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


@pytest.fixture(scope="module")
def demos_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ptx") / "demos.jsonl"
    rows = [
        calculator_demo(a, op, b) for a, op, b in [(17, "*", 23), (40, "+", 2), (305, "+", 96), (8, "*", 9)]
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _equal_rewards():
    """Two groups whose samples all scored alike: their advantages are 0, so they carry no policy gradient."""
    return [
        group("r", f"g-{g}", [trajectory([5, 6, 7, 8 + g], [[9 + i, 10, 11]], 1.0) for i in range(4)])
        for g in range(2)
    ]


def _nll(policy, data):
    """The demonstrations' token-mean cross-entropy under the policy."""
    batch = LearnerBatch.from_groups([Demonstrations(data, len(data), 0).batch(0)], 0)
    lp = torch.cat([policy.forward_old(mb, temperature=1.0).logprobs for mb in pack_batch(batch, 4096)])
    return float(-lp.mean())


def _tokenized(tiny_dir, demos_file):
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    return [tokenize_demonstration(tok, json.loads(line)) for line in demos_file.read_text().splitlines()]


def test_a_steps_demonstrations_depend_on_the_seed_and_step_alone(tiny_dir, demos_file):
    data = _tokenized(tiny_dir, demos_file)
    ids = lambda g: [tuple(t["tokenIds"]) for t in g["trajectories"]]  # noqa: E731
    a, b = Demonstrations(data, 3, seed=1), Demonstrations(data, 3, seed=1)
    assert ids(a.batch(5)) == ids(b.batch(5))  # a resumed run draws the same batch for the step
    assert len(set(ids(a.batch(5)))) == 3  # no repeats while the file has enough
    assert {tuple(x) for s in range(20) for x in ids(a.batch(s))} == {tuple(d[0]) for d in data}
    assert any(ids(a.batch(s)) != ids(a.batch(5)) for s in range(6, 12))
    assert any(ids(Demonstrations(data, 3, seed=2).batch(s)) != ids(a.batch(s)) for s in range(5))
    # more a step than the file holds: every one, then again
    assert sorted(ids(Demonstrations(data, 6, seed=0).batch(0))[:4]) == sorted(tuple(d[0]) for d in data)
    g = a.batch(0)
    assert all(t["lossMask"][t["promptLength"]] == 1 for t in g["trajectories"])


def test_ptx_moves_the_policy_toward_the_demonstrations_when_no_group_has_signal_on_cpu(tiny_dir, demos_file):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", lr=3e-3, sft_batch_size=4)
    data = _tokenized(tiny_dir, demos_file)

    def one_step(c):
        policy = Policy(c, tiny_dir, torch.device("cpu"))
        trainer = Trainer(c, policy)
        trainer.ptx = Demonstrations(data, c.sft_batch_size, c.seed)
        before = {n: p.detach().clone() for n, p in policy.base.named_parameters()}
        nll0 = _nll(policy, data)
        m = trainer.step(_equal_rewards(), 0)
        moved = any(not torch.equal(before[n], p) for n, p in policy.base.named_parameters())
        return {**m, **trainer.last_phases}, nll0, _nll(policy, data), moved

    m, nll0, nll1, moved = one_step(dataclasses.replace(cfg, sft_ptx_coef=0.5))
    assert moved and nll1 < nll0 - 0.05, (nll0, nll1)
    assert m["ptx_loss"] == pytest.approx(nll0, rel=1e-4)  # the term's cross-entropy before the update
    assert m["timing_s/ptx"] > 0
    plain, p0, p1, still = one_step(cfg)
    assert "ptx_loss" not in plain and not still and p1 == p0  # without the term such a step changes nothing


def test_ptx_without_demonstrations_names_the_setting_on_cpu(tiny_dir):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", sft_ptx_coef=0.1)
    trainer = Trainer(cfg, Policy(cfg, tiny_dir, torch.device("cpu")))
    with pytest.raises(ValueError, match="trainer.sft.ptx_coef"):
        trainer.step(_equal_rewards(), 0)


def test_the_learner_attaches_ptx_data_else_the_warm_starts_on_cpu(tiny_dir, demos_file, tmp_path):
    store = FolderBlobStore(tmp_path / "store")
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", sft_data=str(demos_file), sft_batch_size=2)
    trainer = Trainer(cfg, Policy(cfg, tiny_dir, torch.device("cpu")))
    attach_ptx(trainer, cfg, store, tmp_path)
    assert trainer.ptx is None  # no coefficient, nothing loaded
    attach_ptx(trainer, dataclasses.replace(cfg, sft_ptx_coef=0.1), store, tmp_path)
    assert trainer.ptx is not None and len(trainer.ptx.data) == 4 and trainer.ptx.batch_size == 2
    one = tmp_path / "one.jsonl"
    one.write_text(demos_file.read_text().splitlines()[0] + "\n")
    attach_ptx(
        trainer,
        dataclasses.replace(cfg, sft_ptx_coef=0.1, sft_ptx_data=str(one), sft_ptx_batch_size=3),
        store,
        tmp_path,
    )
    assert len(trainer.ptx.data) == 1 and trainer.ptx.batch_size == 3
    with pytest.raises(FileNotFoundError, match="trainer.sft.ptx_data 'nowhere.jsonl'"):
        attach_ptx(
            trainer, dataclasses.replace(cfg, sft_ptx_coef=0.1, sft_ptx_data="nowhere.jsonl"), store, tmp_path
        )


def test_a_stage_that_sets_only_ptx_keys_has_no_warm_start_of_its_own():
    sft = lambda **kw: {"trainer": {"sft": kw}}  # noqa: E731
    run = {
        "stages": [
            {"name": "ptx", "overrides": sft(ptx_coef=0.2, ptx_data="d.jsonl")},
            {"name": "format", "overrides": sft(data="f.jsonl", steps=3)},
            {"name": "plain", "overrides": {}},
        ]
    }
    assert LearnerConfig.stages_with_own_sft(run) == {"format"}

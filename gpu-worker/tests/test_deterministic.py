"""trainer.deterministic: batches are formed by the feeder's positions, not by arrival. The same groups offered
in two different orders train the same steps, in the same order, to the same weights; a group of a later batch
waits for its batch; drops are judged when the batch is released; state.json tells the feeder the version after
each settled batch."""

import json

import pytest
import torch

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.ordered import OrderedBatches
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import random_group

RUN = "r-det"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _session(root, tiny_dir, events, planned, **trainer):
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {
            "batch_prompts": 2,
            "micro_batch_tokens": 512,
            "max_staleness": 1,
            "deterministic": True,
            "lr": 1e-3,
            **trainer,
        },
        "logging": {"tensorboard": False},
    }
    store = FolderBlobStore(root)
    store.put_bytes(
        f"runs/{RUN}/run.json", json.dumps({"config": config, "totals": {"groupsPlanned": planned}}).encode()
    )
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.start()
    return s, store


@pytest.fixture(autouse=True)
def _torch_flags():
    # A session sets PyTorch's process-wide deterministic-kernels flag: put it back for the tests that follow.
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    yield
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def _groups(n, vocab):
    out = []
    for p in range(n):
        # Sampled by the version the feeder pins batch p // 2 to (max_staleness 1): the one after batch p // 2 - 1.
        v = max(0, p // 2 - 1)
        g = random_group(
            RUN, f"e0-p{p}", vocab=vocab, g=4, prompt_len=6, response_len=5, turns=1, seed=p, version=v
        )
        g["position"] = p
        out.append(g)
    return out


def _weights(s):
    return {n: p.detach().clone() for n, p in s.policy.named_trainable_parameters()}


def test_arrival_order_does_not_change_the_run_on_cpu(tiny_dir, tmp_path):
    vocab = json.loads((tiny_dir / "config.json").read_text())["vocab_size"]
    groups = _groups(5, vocab)  # batches {0, 1}, {2, 3}, {4} (the last one partial: 5 planned)
    runs = []
    for name, order in (("in-order", [0, 1, 2, 3, 4]), ("shuffled", [3, 1, 4, 0, 2])):
        events = []
        s, store = _session(tmp_path / name, tiny_dir, events, planned=5)
        for p in order:
            s.offer({"type": "group", "group": json.loads(json.dumps(groups[p]))})
        steps = [e["metrics"] for e in events if e["type"] == "step"]
        runs.append((s, store, steps, events))
    (a, _, steps_a, _), (b, store_b, steps_b, events_b) = runs
    assert a.done and b.done
    # The same batches in the same order: positions 0-1, 2-3, 4, whatever the arrival order.
    assert a.state.consumed_group_ids == b.state.consumed_group_ids == [f"e0-p{p}" for p in range(5)]
    assert len(steps_a) == len(steps_b) == 3
    for ma, mb in zip(steps_a, steps_b, strict=True):
        for k in ("reward_mean", "pg_loss", "grad_norm", "groups"):
            assert ma[k] == mb[k], k
    wa, wb = _weights(a), _weights(b)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    # Shuffled: p3 and p1 arrived first, but no step ran until p0 completed batch 0.
    first_step = next(i for i, e in enumerate(events_b) if e["type"] == "step")
    offered_before = sum(1 for e in events_b[:first_step] if e["type"] == "dropped")
    assert offered_before == 0
    # state.json: three batches settled, the version after each (v0 published at start, then one per step).
    state = json.loads(store_b.get_bytes(f"runs/{RUN}/learner/state.json"))
    assert state["batches"] == {"settled": 3, "versions": [0, 1, 2, 3]}


def test_a_deterministic_learner_uses_deterministic_kernels_on_cpu(tiny_dir, tmp_path):
    # trainer.deterministic turns on PyTorch's deterministic kernels (warning, not failing, on an op without one);
    # a learner that is not deterministic turns them off, whatever the process had before.
    torch.use_deterministic_algorithms(False)
    _session(tmp_path / "det", tiny_dir, [], planned=2)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.is_deterministic_algorithms_warn_only_enabled()
    _session(tmp_path / "free", tiny_dir, [], planned=2, deterministic=False)
    assert not torch.are_deterministic_algorithms_enabled()


def test_drops_are_judged_when_the_batch_is_released_on_cpu(tiny_dir, tmp_path):
    vocab = json.loads((tiny_dir / "config.json").read_text())["vocab_size"]
    events = []
    s, _ = _session(tmp_path, tiny_dir, events, planned=4)
    g0, g1, g2, g3 = _groups(4, vocab)
    for t in g1["trajectories"]:
        t["reward"] = 1.0  # no signal: all rewards equal
    s.offer({"type": "group", "group": g2})  # batch 1: waits
    s.offer({"type": "group", "group": g1})  # batch 0, half
    assert [e for e in events if e["type"] in ("step", "dropped")] == []
    s.offer({"type": "group", "group": g0})  # batch 0 complete: p1 dropped (no signal), p0 trained
    dropped = [(e["groupId"], e["reason"]) for e in events if e["type"] == "dropped"]
    assert dropped == [("e0-p1", "no_signal")]
    assert [e["metrics"]["groups"] for e in events if e["type"] == "step"] == [1]
    s.offer({"type": "group", "group": g3})  # batch 1 complete
    assert s.state.consumed_group_ids == ["e0-p0", "e0-p2", "e0-p3"]
    assert s.state.dropped_group_ids == ["e0-p1"]
    assert s.ordered.settled == 2 and s.done


def test_a_group_without_a_position_is_refused_by_name_on_cpu(tiny_dir, tmp_path):
    vocab = json.loads((tiny_dir / "config.json").read_text())["vocab_size"]
    s, _ = _session(tmp_path, tiny_dir, [], planned=2)
    g = _groups(1, vocab)[0]
    del g["position"]
    with pytest.raises(ValueError, match="e0-p0 carries no feeder position"):
        s.offer({"type": "group", "group": g})


def test_ordered_batches_release_whole_batches_in_position_order():
    ob = OrderedBatches(batch_prompts=3, versions=[0])
    for p in (4, 2, 0):
        ob.add(p, {"p": p})
    assert ob.release(planned=7) is None  # 1 missing
    ob.add(1, None)  # dropped on arrival
    batch = ob.release(planned=7)
    assert [a.position for a in batch] == [0, 1, 2] and batch[1].group is None
    ob.settle(1)
    assert ob.release(planned=7) is None  # 3 and 5 missing
    ob.add(3, {"p": 3})
    ob.add(5, {"p": 5})
    assert [a.position for a in ob.release(planned=7)] == [3, 4, 5]
    ob.settle(2)
    ob.add(6, {"p": 6})
    assert [a.position for a in ob.release(planned=7)] == [6]  # the last batch ends at the planned count
    ob.settle(2)
    assert ob.state() == {"settled": 3, "versions": [0, 1, 2, 2]}
    with pytest.raises(ValueError, match="settled already"):
        ob.add(2, {"p": 2})

"""A run that cannot learn says so and stops: with filter_groups, a batch whose groups all score alike trains
nothing; each such batch gets a metrics row saying how many groups were dropped and why, a step's row counts the
drops since the previous one, after algorithm.max_num_gen_batches empty batches in a row the learner stops the run
with a reason naming the cause, and a run that ends having trained nothing fails instead of completing."""

import json

import pytest

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore, keys
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-ns"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _session(root, tiny_dir, planned, *, deterministic=False, refill=False, max_batches=3):
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "algorithm": {"max_num_gen_batches": max_batches, "refill_filtered_groups": refill},
        "trainer": {
            "batch_prompts": 2,
            "micro_batch_tokens": 256,
            "max_staleness": 10,
            "save_every": 100,
            "deterministic": deterministic,
        },
        "logging": {"tensorboard": False},
    }
    store = FolderBlobStore(root)
    run = {"status": "running", "reason": None, "config": config, "totals": {"groupsPlanned": planned}}
    store.put_bytes(keys.run_json(RUN), json.dumps(run).encode())
    events: list[dict] = []
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.start()
    return s, store, events


def _g(i, rewards=(0.0, 0.0), calls=0):
    trajs = [trajectory([5, 6], [[10 + i, 11 + k]], r) for k, r in enumerate(rewards)]
    for t in trajs:
        t["turns"][0]["toolCalls"] = [
            {
                "name": "calculator",
                "arguments": {"expression": "1+1"},
                "result": {"ok": True, "output": "2", "error": None, "truncated": False},
                "durationMs": 1,
            }
        ] * calls
    return group(RUN, f"e0-p{i}", trajs)


def _offer(s, g, position=None):
    line = {"type": "group", "group": g if position is None else {**g, "position": position}}
    s.offer(line)


def _state(store):
    return json.loads(store.get_bytes(keys.learner_state(RUN)))


def _rows(store):
    text = store.get_bytes(f"runs/{RUN}/metrics/metrics.jsonl").decode()
    return [json.loads(x) for x in text.splitlines() if x.strip()]


@pytest.mark.parametrize("deterministic", [False, True])
def test_batches_that_train_nothing_stop_the_run_with_the_cause_on_cpu(tiny_dir, tmp_path, deterministic):
    s, store, events = _session(tmp_path, tiny_dir, planned=40, deterministic=deterministic)
    for i in range(40):
        if s.done:
            break
        _offer(s, _g(i), position=i if deterministic else None)
    # Three batches of two groups, every trajectory scored 0 with no tool call: the run stops after the third.
    assert s.done and s.state.step == 0
    state = _state(store)
    assert state["done"] is True
    assert state["failed"].startswith(
        "no group had different rewards in 3 batches in a row (6 groups, algorithm.max_num_gen_batches=3): "
        "every trajectory scored 0.000, 0.00 tool calls per trajectory; the policy never calls a tool"
    )
    assert sum(1 for e in events if e["type"] == "dropped" and e["reason"] == "no_signal") == 6
    assert events[-1] == {"type": "done"}
    empty = [r for r in _rows(store) if r.get("empty_batch")]
    assert [r["empty_batches"] for r in empty] == [1, 2, 3]
    assert all(r["dropped/no_signal"] == 2 and r["groups"] == 0 for r in empty)
    assert empty[-1]["dropped_reward_mean"] == 0.0 and empty[-1]["dropped_tool_calls_per_trajectory"] == 0.0
    assert all("reward_mean" not in r for r in empty)  # the reward plot skips them


def test_a_step_resets_the_count_and_its_row_says_what_was_dropped_on_cpu(tiny_dir, tmp_path):
    s, store, _ = _session(tmp_path, tiny_dir, planned=40)
    for i in range(4):  # two empty batches (the bound is three)
        _offer(s, _g(i, rewards=(1.0, 1.0), calls=1))
    _offer(s, _g(4, rewards=(0.0, 1.0), calls=1))  # a batch with one group to learn from
    _offer(s, _g(5, rewards=(1.0, 1.0), calls=1))
    for i in range(6, 10):  # two more empty batches: four in all, but never three in a row
        _offer(s, _g(i, rewards=(1.0, 1.0), calls=1))
    assert not s.done and s.state.step == 1
    step_row = next(r for r in _rows(store) if r.get("reward_mean") is not None)
    assert step_row["empty_batches"] == 2.0 and step_row["dropped/no_signal"] == 5.0  # 4 before + 1 beside it
    assert "failed" not in _state(store)


def test_refilling_batches_count_their_generation_batches_on_cpu(tiny_dir, tmp_path):
    s, store, _ = _session(tmp_path, tiny_dir, planned=40, refill=True)
    for i in range(40):
        if s.done:
            break
        _offer(s, _g(i, rewards=(0.5, 0.5), calls=2))
    assert s.done
    reason = _state(store)["failed"]
    assert "in 3 batches in a row (6 groups" in reason
    assert (
        "every trajectory scored 0.500, 2.00 tool calls per trajectory; every sample of every group" in reason
    )


def test_a_run_that_ends_having_trained_nothing_fails_on_cpu(tiny_dir, tmp_path):
    s, store, _ = _session(tmp_path, tiny_dir, planned=4, max_batches=0)  # no bound: it ends with its groups
    for i in range(4):
        _offer(s, _g(i))
    assert s.done and s.state.step == 0
    assert _state(store)["failed"] == (
        "the run trained nothing: all 4 groups sampled were dropped (4 no signal, all rewards of the group "
        "equal): every trajectory scored 0.000, 0.00 tool calls per trajectory; the policy never calls a tool "
        "(a warm start, trainer.sft, teaches the call format). Set algorithm.max_num_gen_batches=0 to sample on "
        "regardless"
    )


def test_a_run_that_trained_ends_as_before_on_cpu(tiny_dir, tmp_path):
    s, store, _ = _session(tmp_path, tiny_dir, planned=2)
    _offer(s, _g(0, rewards=(0.0, 1.0)))
    _offer(s, _g(1, rewards=(0.0, 1.0)))
    assert s.done and s.state.step == 1
    assert "failed" not in _state(store) and _state(store)["done"] is True


def test_stale_groups_sampled_before_a_restart_do_not_count_on_cpu():
    """A resumed learner republishes its weights as a new version, and every group still in flight from before
    the restart is too stale for it: those drops empty batches without saying the run cannot learn. Groups sampled
    after the restart that come too late count as before."""
    from toolrl_learner.train.no_signal import NoSignalWatch

    def sampled_by(version: int, i: int):
        return group(RUN, f"e0-p{i}", [trajectory([5, 6], [[7, 8]], r, version=version) for r in (0.0, 1.0)])

    watch = NoSignalWatch(batch_prompts=2, max_batches=1, start_version=14)
    for i in range(4):
        watch.dropped("stale", sampled_by(6, i))
    row = watch.batch_empty(step=0, policy_version=14)  # a batch of the backlog: reported, not counted
    assert row["dropped/stale_before_restart"] == 4 and row["empty_batches"] == 0
    assert not watch.exhausted() and watch.trajectories == 0
    watch.dropped("stale", sampled_by(14, 5))
    row = watch.batch_empty(step=0, policy_version=14)
    assert row["dropped/stale"] == 1 and "dropped/stale_before_restart" not in row
    assert watch.exhausted()

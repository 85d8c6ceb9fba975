"""Groups the pipeline dead-lettered: the learner counts each as dropped as its record appears (and so ends a
run that would otherwise wait for it forever), trains it after all if a DLQ redrive brings it back, records
its own refusals in the same place, and stops when run.json says the run failed."""

import json

import pytest

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore, keys
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.synthetic import group, trajectory

RUN = "r-dl"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )


def _run_json(store, planned, status="running", reason=None, config=None):
    doc = {"status": status, "reason": reason, "config": config, "totals": {"groupsPlanned": planned}}
    store.put_bytes(keys.run_json(RUN), json.dumps(doc).encode())


def _session(root, tiny_dir, events, planned):
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": 1, "micro_batch_tokens": 256, "max_staleness": 10, "save_every": 1},
        "logging": {"tensorboard": False},
    }
    store = FolderBlobStore(root)
    _run_json(store, planned, config=config)
    s = LearnerSession(store, RUN, emit=events.append, device="cpu")
    s.dead_letters.period_s = 0  # poll on every tick (every few seconds in a run)
    s.start()
    return s, store, config


def _g(i):
    trajs = [trajectory([5, 6], [[10 + i, 11 + k]], r) for k, r in enumerate((0.0, 1.0))]
    return group(RUN, f"e0-p{i}", trajs)


def _dead_letter(
    store, group_id, stage="reward", split="train", reason="Error: reward blew up (after 5 attempts)"
):
    # What the stages write (shared/pipeline/dead-letters.ts), key and record as the TypeScript side makes them.
    record = {
        "schemaVersion": 1,
        "runId": RUN,
        "groupId": group_id,
        "split": split,
        "stage": stage,
        "sampleIndex": 3,
        "messageId": "5fea7756-0b7a-4b5e-9a41-1a2b3c4d5e6f",
        "reason": reason,
        "receiveCount": 5,
        "deadLetteredAt": "2025-01-01T00:00:00.000Z",
    }
    key = f"runs/{RUN}/dead-letters/{group_id}/{stage}-{record['messageId']}.json"
    store.put_bytes(key, json.dumps(record).encode())


def test_the_key_layout_is_the_pipelines():
    # shared/topology.ts keys.deadLetter gives the same string (test/unit/pipeline/dead-letters.test.ts)
    assert keys.dead_letter("r-1", "e0-p3", "reward", "m.1") == "runs/r-1/dead-letters/e0-p3/reward-m_1.json"


def test_a_dead_lettered_group_is_counted_as_dropped_and_the_run_ends_on_cpu(tiny_dir, tmp_path):
    events = []
    s, store, _ = _session(tmp_path, tiny_dir, events, planned=3)
    s.offer({"type": "group", "group": _g(0)})
    s.offer({"type": "group", "group": _g(1)})
    assert not s.done  # without the record it would wait for e0-p2 forever
    _dead_letter(store, "e0-p2")
    _dead_letter(store, "val-v0-p0", split="val")  # validation groups are not the learner's to count
    s.tick()
    dropped = [(e["groupId"], e["reason"], e["message"]) for e in events if e["type"] == "dropped"]
    assert dropped == [("e0-p2", "dead_lettered", "reward: Error: reward blew up (after 5 attempts)")]
    assert (s.state.groups_consumed, s.state.groups_dropped) == (2, 1)
    assert s.state.dead_lettered_group_ids == ["e0-p2"]
    assert s.done and events[-1] == {"type": "done"}
    state = json.loads(store.get_bytes(keys.learner_state(RUN)))
    assert (state["groupsConsumed"], state["groupsDropped"], state["done"]) == (2, 1, True)
    # settled by the final checkpoint, like any drop
    committed = [g for e in events if e["type"] == "committed" for g in e["groupIds"]]
    assert "e0-p2" in committed


def test_a_redriven_group_that_arrives_after_all_is_trained_on_cpu(tiny_dir, tmp_path):
    events = []
    s, store, _ = _session(tmp_path, tiny_dir, events, planned=3)
    s.offer({"type": "group", "group": _g(0)})
    _dead_letter(store, "e0-p1")
    s.tick()
    assert s.state.groups_dropped == 1 and not s.done
    s.offer({"type": "group", "group": _g(1)})  # a DLQ redrive sent it back and it completed
    assert (s.state.groups_consumed, s.state.groups_dropped) == (2, 0)
    assert s.state.dead_lettered_group_ids == [] and "e0-p1" in s.state.consumed_group_ids
    s.tick()  # its record is still there: not counted a second time
    assert s.state.groups_dropped == 0
    s.offer({"type": "group", "group": _g(2)})
    assert s.done


def test_an_invalid_group_is_recorded_beside_the_stages_dead_letters_on_cpu(tiny_dir, tmp_path):
    events = []
    s, store, _ = _session(tmp_path, tiny_dir, events, planned=3)
    ref = {"type": "group", "schemaVersion": 1, "runId": RUN, "groupId": "e0-p0"}
    s.offer({**ref, "manifestKey": f"runs/{RUN}/groups/e0-p0.json", "sha256": "0" * 64})
    (key,) = store.list(keys.dead_letters(RUN))
    assert key.startswith(f"runs/{RUN}/dead-letters/e0-p0/learner-")
    record = json.loads(store.get_bytes(key))
    assert record["stage"] == "learner" and "not found" in record["reason"]
    s.tick()  # its own record: already counted once
    assert s.state.groups_dropped == 1


def test_a_failed_run_stops_the_learner_on_cpu(tiny_dir, tmp_path):
    events = []
    s, store, config = _session(tmp_path, tiny_dir, events, planned=10)
    s.offer({"type": "group", "group": _g(0)})
    steps = s.state.step
    _run_json(store, 10, status="failed", reason="3 of 10 planned groups were dead-lettered", config=config)
    s._totals_read_at = 0  # run.json is re-read every 5 s
    s.tick()
    assert s.done and events[-1] == {"type": "done"}
    assert s.state.step == steps
    assert json.loads(store.get_bytes(keys.learner_state(RUN)))["done"] is True

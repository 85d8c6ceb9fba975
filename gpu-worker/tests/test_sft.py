"""SFT mode: demonstrations from JSONL or Parquet, loss on assistant tokens only, the loss falls; as a
warm start it runs once before v0, and a curriculum stage's own `trainer.sft` runs once before that
stage's first batch (a restart redoes neither)."""

import dataclasses
import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from demos import CALL, DEMO, calculator_demo
from transformers import AutoTokenizer

from toolrl_learner.config import LearnerConfig
from toolrl_learner.contracts import validate
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.comm import LocalComm
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.session import LearnerSession
from toolrl_learner.train.sft import (
    cut_context,
    load_demonstrations,
    run_sft,
    tokenize_demonstration,
    warmup_keep,
)
from toolrl_learner.train.synthetic import group, trajectory


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


def _kinds(events):
    """The protocol lines' types, leaving out `state` (announcements of learner/state.json writes)."""
    return [e["type"] for e in events if e["type"] != "state"]


def test_loss_mask_covers_exactly_the_assistant_messages_on_cpu(tiny_dir):
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    ids, mask = tokenize_demonstration(tok, DEMO)
    assert len(ids) == len(mask)
    # the masked-in tokens, split where the mask breaks, decode to the two assistant turns with their end marker
    spans, cur = [], []
    for i, m in zip(ids, mask, strict=True):
        if m:
            cur.append(i)
        elif cur:
            spans.append(cur)
            cur = []
    spans += [cur] if cur else []
    assert [tok.decode(s) for s in spans] == [CALL + "<|im_end|>\n", "The answer is 391.<|im_end|>\n"]
    # the user question and the tool result are never trained on
    assert "391\n</tool_response>" in tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])


def test_jsonl_and_parquet_demonstrations_on_cpu(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(DEMO) + "\n")
    pq.write_table(pa.table({"prompt": [json.dumps(DEMO["messages"])]}), tmp_path / "d.parquet")
    assert load_demonstrations(tmp_path / "d.jsonl")[0]["messages"] == DEMO["messages"]
    assert load_demonstrations(tmp_path / "d.parquet")[0]["messages"] == DEMO["messages"]
    (tmp_path / "bad.jsonl").write_text(
        json.dumps(DEMO) + "\n" + json.dumps({"messages": DEMO["messages"][:1]}) + "\n"
    )
    with pytest.raises(ValueError, match="bad.jsonl row 1: no assistant message"):
        load_demonstrations(tmp_path / "bad.jsonl")
    (tmp_path / "cols.jsonl").write_text(json.dumps({"text": "hi"}) + "\n")
    with pytest.raises(ValueError, match="row 0: needs a `messages`"):
        load_demonstrations(tmp_path / "cols.jsonl")


def test_sft_loss_falls_on_cpu(tiny_dir, tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(DEMO) + "\n")
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", sft_steps=8, sft_lr=1e-2, sft_batch_size=2)
    history = run_sft(Policy(cfg, tiny_dir, torch.device("cpu")), cfg, tmp_path / "d.jsonl")
    losses = [h["sft_loss"] for h in history]
    assert losses[0] > 5.0  # ~ log(vocab) at random init
    assert losses[-1] < 0.5 * losses[0], losses


def test_share_batch_prefix_packs_the_demonstrations_common_beginning_once_on_cpu(tiny_dir, tmp_path):
    # Demonstrations that begin with the same system prompt: with trainer.share_batch_prefix the warm start packs
    # that beginning once a micro-batch, and trains the same steps up to rounding: each step's loss is computed by
    # the weights the steps before it left, so three equal losses check the steps too. (The weights themselves are
    # not compared element by element: Adam moves a weight whose gradient is rounding noise by about lr either way.)
    system = {"role": "system", "content": "You answer arithmetic questions with the calculator tool. " * 3}
    demos = [
        calculator_demo(a, op, b) for a, op, b in ((17, "*", 23), (45, "+", 61), (8, "*", 97), (230, "+", 5))
    ]
    lines = [json.dumps({"messages": [system, *d["messages"]]}) for d in demos]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    base = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", sft_steps=3, sft_lr=1e-2, sft_batch_size=4)

    class Counting(LocalComm):
        tokens = 0
        roots = 0

        def micro_batches(self, *args, **kwargs):
            mbs = super().micro_batches(*args, **kwargs)
            self.tokens += sum(mb.num_tokens for mb in mbs)
            self.roots += sum(mb.branch is not None and int(mb.branch[0]) == -2 for mb in mbs)
            return mbs

    def warm_start(share: bool):
        cfg = dataclasses.replace(base, share_batch_prefix=share)
        policy, comm = Policy(cfg, tiny_dir, torch.device("cpu")), Counting()
        history = run_sft(policy, cfg, tmp_path / "d.jsonl", comm=comm)
        return [h["sft_loss"] for h in history], comm

    plain, c_plain = warm_start(False)
    shared, c_shared = warm_start(True)
    assert c_plain.roots == 0 and c_shared.roots == 3  # one micro-batch a step, rooted
    assert c_shared.tokens < c_plain.tokens - 3 * 3 * 20  # the system prompt's tokens, 3 of 4 times a step
    assert shared == pytest.approx(plain, rel=1e-5)


def test_context_warmup_cuts_only_the_context_before_the_first_assistant_token():
    # prompt 0-4, assistant 5-6, tool result 7, assistant 8: keep 2 context tokens -> from index 3 on
    ids, mask = list(range(9)), [0, 0, 0, 0, 0, 1, 1, 0, 1]
    assert cut_context(ids, mask, 2) == ([3, 4, 5, 6, 7, 8], [0, 0, 1, 1, 0, 1])
    assert cut_context(ids, mask, 50) == (ids, mask)  # shorter than the budget: whole


def test_linear_context_warmup_grows_to_the_longest_context():
    cfg = LearnerConfig(
        model_path="tiny", sft_context_warmup_steps=4, sft_context_warmup_tokens=20,
        sft_context_warmup_schedule="linear",
    )  # fmt: skip
    # from 20 tokens to the longest context (100) over 4 steps, then the whole demonstration
    assert [warmup_keep(s, cfg, 100) for s in range(1, 7)] == [20, 40, 60, 80, None, None]
    step = dataclasses.replace(cfg, sft_context_warmup_schedule="step")
    assert [warmup_keep(s, step, 100) for s in range(1, 6)] == [20, 20, 20, 20, None]


def test_sft_context_warmup_and_cosine_schedule_on_cpu(tiny_dir, tmp_path, monkeypatch):
    (tmp_path / "d.jsonl").write_text(json.dumps(DEMO) + "\n")
    cfg = LearnerConfig(
        model_path=str(tiny_dir), dtype="fp32", sft_steps=4, sft_lr=1e-2, sft_batch_size=1,
        sft_lr_scheduler="cosine", sft_context_warmup_steps=2, sft_context_warmup_tokens=3,
    )  # fmt: skip
    seen = []
    import toolrl_learner.train.sft as sft_mod

    real = sft_mod.LearnerBatch.from_groups
    monkeypatch.setattr(
        sft_mod.LearnerBatch,
        "from_groups",
        lambda groups, v: seen.append(groups[0]["trajectories"][0]["tokenIds"]) or real(groups, v),
    )
    history = run_sft(Policy(cfg, tiny_dir, torch.device("cpu")), cfg, tmp_path / "d.jsonl")
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    full, mask = tokenize_demonstration(tok, DEMO)
    first = mask.index(1)
    # steps 1-2 see 3 context tokens + everything from the first assistant token; steps 3-4 the whole demonstration
    assert [len(x) for x in seen] == [len(full) - first + 3] * 2 + [len(full)] * 2
    assert seen[0] == full[first - 3 :] and seen[2] == full
    # cosine over 4 steps from 1e-2 to 0: 1e-2 * (1 + cos(pi * k / 4)) / 2 for k = 0..3
    assert [h["lr"] for h in history] == pytest.approx([1e-2, 8.535534e-3, 5e-3, 1.464466e-3], rel=1e-5)


def test_sft_learning_rate_warmup_then_cosine_on_cpu(tiny_dir, tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(DEMO) + "\n")
    run_config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {
            "sft": {
                "data": "d.jsonl", "steps": 6, "lr": 1e-2, "batch_size": 1, "warmup_steps": 2,
                "lr_scheduler": "cosine",
            },
        },
    }  # fmt: skip
    cfg = LearnerConfig.from_run_config(run_config)
    assert cfg.sft_warmup_steps == 2
    history = run_sft(Policy(cfg, tiny_dir, torch.device("cpu")), cfg, tmp_path / "d.jsonl")
    # 1e-2 * 1/2, 1e-2 * 2/2, then cosine over the 4 steps after the warmup (k = 0..3 of 4)
    cosine = [1e-2 * (1 + math.cos(math.pi * k / 4)) / 2 for k in range(4)]
    assert [h["lr"] for h in history] == pytest.approx([5e-3, 1e-2, *cosine], rel=1e-6)


def test_sft_seed_fixes_the_warm_starts_batches_whatever_the_run_seed_on_cpu(tiny_dir, tmp_path, monkeypatch):
    demos = [calculator_demo(a, "+", 10 * a) for a in range(1, 9)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    import toolrl_learner.train.sft as sft_mod

    real = sft_mod.LearnerBatch.from_groups
    seen: list[list[list[int]]] = []
    monkeypatch.setattr(
        sft_mod.LearnerBatch,
        "from_groups",
        lambda groups, v: (
            seen[-1].append([t["tokenIds"] for t in groups[0]["trajectories"]]) or real(groups, v)
        ),
    )

    def batches(trainer: dict) -> list[list[list[int]]]:
        sft = {"data": "d.jsonl", "steps": 4, "lr": 1e-3, "batch_size": 2, **trainer.pop("sft", {})}
        run_config = {
            "model": {"path": str(tiny_dir), "dtype": "fp32"},
            "data": {"train": "t.parquet"},
            "trainer": {**trainer, "sft": sft},
        }
        cfg = LearnerConfig.from_run_config(run_config)
        seen.append([])
        run_sft(Policy(cfg, tiny_dir, torch.device("cpu")), cfg, tmp_path / "d.jsonl")
        return seen[-1]

    run_seed_0 = batches({"seed": 0})
    fixed = {"model": {"path": "m"}, "data": {"train": "t"}, "trainer": {"sft": {"data": "d", "seed": 0}}}
    assert LearnerConfig.from_run_config(fixed).sft_seed == 0
    # trainer.sft.seed: 0 walks the demonstrations as trainer.seed 0 does, whatever trainer.seed says
    assert batches({"seed": 5, "sft": {"seed": 0}}) == run_seed_0
    # unset, the run's seed walks them: another order
    assert batches({"seed": 5}) != run_seed_0


def test_sft_warm_start_runs_once_before_v0_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    store.put_bytes("runs/r/input/sft.jsonl", (json.dumps(DEMO) + "\n").encode())
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"sft": {"data": "runs/r/input/sft.jsonl", "steps": 2, "batch_size": 1}},
        "logging": {"tensorboard": False},
    }
    store.put_bytes(
        "runs/r/run.json", json.dumps({"config": config, "totals": {"groupsPlanned": 10}}).encode()
    )
    events = []
    s = LearnerSession(store, "r", emit=events.append, device="cpu")
    s.start()
    # one progress line per SFT step (validated against learner-stdio-out), then v0, its checkpoint, ready
    assert _kinds(events) == ["sft", "sft", "published", "committed", "ready"]
    assert [(e["step"], e["steps"]) for e in events[:2]] == [(1, 2), (2, 2)]
    for e in events[:2]:
        validate("learner-stdio-out", e)
    assert s.state.sft_done and store.exists("runs/r/checkpoints/step-0/COMPLETE.json")
    # its progress is in the bucket for `toolrl status` (the first step, then the last one, marked done)
    warm = json.loads(store.get_bytes("runs/r/learner/warm-start.json"))
    validate("learner-warm-start", warm)
    assert {k: warm[k] for k in ("stage", "step", "steps", "done")} == {
        "stage": None,
        "step": 2,
        "steps": 2,
        "done": True,
    }
    # a restart resumes from the step-0 checkpoint and publishes nothing new
    events2 = []
    s2 = LearnerSession(store, "r", emit=events2.append, device="cpu")
    s2.start()
    assert [e for e in events2 if e["type"] != "state"] == [
        {"type": "ready", "policyVersion": 0, "resumedFromStep": 0}
    ]


def test_a_format_stage_runs_its_own_sft_once_before_its_first_batch_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    store.put_bytes("runs/r/input/format.jsonl", (json.dumps(DEMO) + "\n").encode())
    sft = {"data": "runs/r/input/format.jsonl", "steps": 2, "batch_size": 1, "lr": 1e-2}
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": 1, "micro_batch_tokens": 256, "max_staleness": 10, "save_every": 100},
        "stages": [
            {"name": "format", "data": {"train": "f.parquet"}, "overrides": {"trainer": {"sft": sft}}},
            {"name": "full", "data": {"train": "t.parquet"}},
        ],
        "logging": {"tensorboard": False},
    }
    store.put_bytes("runs/r/run.json", json.dumps({"config": config, "totals": {}}).encode())

    def offer(session, i, stage):
        trajs = [trajectory([5, 6], [[10 + i, 11 + k]], float(k % 2)) for k in range(2)]
        session.offer({"type": "group", "group": group("r", f"e0-p{i}", trajs, stage=stage)})

    events = []
    s = LearnerSession(store, "r", emit=events.append, device="cpu")
    s.start()
    assert _kinds(events) == ["published", "ready"]  # no warm start: the run has no trainer.sft
    del events[:]
    offer(s, 0, "format")
    # the stage's SFT first (2 steps), published as v1 and checkpointed at step 0 (the batch it precedes
    # stays uncommitted), then the batch trains on v1 and v2 is published
    assert _kinds(events) == ["sft", "sft", "published", "committed", "step", "published"]
    assert events[3] == {"type": "committed", "step": 0, "groupIds": []}
    assert events[4]["metrics"]["policy_version"] == 1 and events[4]["metrics"]["stage_index"] == 0.0
    manifests = [json.loads(store.get_bytes(f"runs/r/policy/v{v}/manifest.json")) for v in (0, 1)]
    assert manifests[1]["files"]["model.onnx.data"] != manifests[0]["files"]["model.onnx.data"]
    marker = json.loads(store.get_bytes("runs/r/checkpoints/step-0/COMPLETE.json"))["trainerState"]
    assert (marker["sft_done_stages"], marker["policy_version"], marker["sft_done"]) == (["format"], 1, False)
    # once per stage: not for its next batches, nor for a stage without trainer.sft of its own
    offer(s, 1, "format")
    offer(s, 2, "full")
    assert [e["type"] for e in events].count("sft") == 2 and s.state.step == 3

    # a restart resumes from the step-0 checkpoint: the stage's SFT is not redone, its first batch is
    events2 = []
    s2 = LearnerSession(store, "r", emit=events2.append, device="cpu")
    s2.start()
    assert s2.state.sft_done_stages == ["format"]
    offer(s2, 0, "format")
    assert "sft" not in [e["type"] for e in events2] and s2.state.consumed_group_ids == ["e0-p0"]


def test_missing_stage_sft_data_is_named_on_cpu(tiny_dir, tmp_path):
    store = FolderBlobStore(tmp_path)
    sft = {"data": "runs/r/input/missing.jsonl", "steps": 1}
    config = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"batch_prompts": 1},
        "stages": [
            {"name": "format", "data": {"train": "f.parquet"}, "overrides": {"trainer": {"sft": sft}}}
        ],
        "logging": {"tensorboard": False},
    }
    s = LearnerSession(store, "r", emit=lambda _: None, device="cpu", run_config=config)
    s.start()
    trajs = [trajectory([5, 6], [[10, 11 + k]], float(k)) for k in range(2)]
    with pytest.raises(
        FileNotFoundError, match=r"stages\[format\]\.overrides\.trainer\.sft\.data 'runs/r/input/missing"
    ):
        s.offer({"type": "group", "group": group("r", "e0-p0", trajs, stage="format")})

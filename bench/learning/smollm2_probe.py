"""Is the SmolLM2 example's warm start right? A diagnostic for `trainer.sft` on examples/smollm2.

Runs the run config's SFT warm start alone (the learner's own `run_sft`: same model, LoRA, template, data, seed and
schedule) and after the given steps measures, on the validation questions (held-out phrasings) and on as many
training questions, what sampling at temperature 1 would do, exactly, from one teacher-forced forward pass each:
`call` = the probability of opening with a tool call, `expr` = of the whole correct call (the expression in
any of its commutative orders: `a + b`, `b + a`, ...), `box` = of boxing the tool's result once it came back,
and `acc` = `expr` x `box`, the expected accuracy of one sampled answer that calls the tool right (a lower bound:
a right answer written another way is not counted). Per kind of question too, to see which ones the model misses.

    gpu-worker/.venv/bin/python bench/learning/smollm2_probe.py [--at 20,40] [--seed 0] [key=value ...]

`key=value` overrides the run config as `toolrl train` does (e.g. `trainer.sft.steps=60`).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import torch
import yaml
from transformers import AutoTokenizer

from toolrl_learner.config import LearnerConfig
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.comm import LOCAL
from toolrl_learner.train.policy import Policy, resolve_model_dir
from toolrl_learner.train.sft import _as_group, run_sft, tokenize_demonstration

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "shared/policy/templates"


def override(config: dict[str, Any], assignment: str) -> None:
    key, _, value = assignment.partition("=")
    *path, last = key.split(".")
    node = config
    for part in path:
        node = node.setdefault(part, {})
    node[last] = yaml.safe_load(value)


def variants(expr: str) -> list[str]:
    """The expression and its commutative rewrites (the calculator gives them all the same result)."""
    t = expr.split(" ")
    out = [expr]
    if len(t) == 3 and t[1] in "+*":
        out.append(f"{t[2]} {t[1]} {t[0]}")
    if len(t) == 5 and t[1] in "+*":
        out.append(f"{t[2]} {t[1]} {t[0]} {t[3]} {t[4]}")
    return out


def kind(expr: str) -> str:
    ops = expr.split(" ")[1::2]
    return " ".join(ops)


def spans(mask: list[int]) -> list[tuple[int, int]]:
    out, i = [], 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def cases(tokenizer, tools: list[dict], rows: list[dict]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        expr = row["extra_info"]["expression"]
        answer = row["reward_model"]["ground_truth"]
        seqs = []
        for e in variants(expr):
            call = {"name": "calculator", "arguments": {"expression": e}}
            messages = [
                *row["prompt"],
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
                {"role": "tool", "name": "calculator", "content": answer},
                {"role": "assistant", "content": f"\\boxed{{{answer}}}"},
            ]
            ids, mask = tokenize_demonstration(tokenizer, {"messages": messages, "tools": tools})
            seqs.append((ids, spans(mask)))
        out.append({"kind": kind(expr), "seqs": seqs, "tokens": tokenizer.convert_ids_to_tokens(seqs[0][0])})
    return out


@torch.no_grad()
def measure(
    policy: Policy, items: list[dict[str, Any]], budget: int = 4096, explain: int = 0
) -> dict[str, Any]:
    """One packed pass of the learner's own forward over every case, the prompt they share computed once."""
    flat = [(i, ids, sp) for i, it in enumerate(items) for ids, sp in it["seqs"]]
    seqs = []
    for _, ids, sp in flat:
        mask = [0] * len(ids)
        for s, e in sp[:2]:
            mask[s:e] = [1] * (e - s)
        seqs.append((ids, mask))
    batch = LearnerBatch.from_groups([_as_group(0, seqs)], 0)
    lp = torch.zeros(batch.num_loss_tokens)
    policy.base.eval()
    for mb in LOCAL.micro_batches(batch, budget, share_prefix=True):
        lp[mb.token_index] = policy.forward_old(mb).logprobs
    logp_call = defaultdict(list)  # item -> log p(call span) per variant
    first, box = {}, {}
    box_seen: set[int] = set()
    for s, (i, _, sp) in enumerate(flat):
        tok = lp[int(batch.tok_offsets[s]) : int(batch.tok_offsets[s + 1])]
        n_call = sp[0][1] - sp[0][0]
        logp_call[i].append(float(tok[:n_call].sum()))
        first[i] = float(tok[0])
        box[i] = float(tok[n_call:].sum())
        if i < explain and i not in box_seen:
            box_seen.add(i)
            # The first variant's tokens the model would sample with probability under 0.9, and where.
            positions = [p for s_, e_ in sp[:2] for p in range(s_, e_)]
            weak = [
                f"{items[i]['tokens'][pos]!r}:{math.exp(float(tok[k])):.2f}"
                for k, pos in enumerate(positions)
                if math.exp(float(tok[k])) < 0.9
            ]
            print(f"    [{items[i]['kind']}] weak tokens: {' '.join(weak) or '-'}", flush=True)
    policy.base.train()
    per_kind: dict[str, list[float]] = defaultdict(list)
    rows = []
    for i, it in enumerate(items):
        expr = sum(math.exp(x) for x in logp_call[i])
        b = math.exp(box[i])
        rows.append((math.exp(first[i]), expr, b, expr * b))
        per_kind[it["kind"]].append(expr * b)
    mean = [sum(r[j] for r in rows) / len(rows) for j in range(4)]
    return {
        "call": mean[0],
        "expr": mean[1],
        "box": mean[2],
        "acc": mean[3],
        "kinds": {k: sum(v) / len(v) for k, v in sorted(per_kind.items())},
    }


def fmt(name: str, m: dict[str, Any]) -> str:
    kinds = " ".join(f"[{k}] {v:.2f}" for k, v in m["kinds"].items())
    return (
        f"  {name}: call {m['call']:.2f} expr {m['expr']:.2f} box {m['box']:.2f} acc {m['acc']:.2f}   {kinds}"
    )


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--config", default=str(REPO / "examples/smollm2/run.yaml"))
    ap.add_argument("--seed", type=int, default=0, help="trainer.seed (the LoRA weights and the batches)")
    ap.add_argument("--at", default="", help="SFT steps to measure at (default: the last)")
    ap.add_argument("--train-rows", type=int, default=32, help="training questions measured (0: none)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save", default="", help="write the trained LoRA state here (torch.save)")
    ap.add_argument("--explain", type=int, default=0, help="print the weak tokens of the first N questions")
    ap.add_argument("--workdir", default="/tmp/toolrl-smollm2-probe")
    ap.add_argument("overrides", nargs="*", help="key=value on the run config")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    config_path = Path(args.config).resolve()
    config = yaml.safe_load(config_path.read_text())
    config["trainer"]["seed"] = args.seed
    for assignment in args.overrides:
        override(config, assignment)
    template = config["model"].get("chat_template")
    if template is not None and "{" not in template:
        named = TEMPLATES / f"{template}.jinja"
        config["model"]["chat_template"] = (
            named if named.is_file() else config_path.parent / template
        ).read_text()
    cfg = LearnerConfig.from_run_config(config)
    here = config_path.parent
    sft_data = here / config["trainer"]["sft"]["data"]
    workdir = Path(args.workdir) / f"seed-{args.seed}"
    workdir.mkdir(parents=True, exist_ok=True)
    model_dir = resolve_model_dir(config["model"]["path"], workdir, args.seed)
    policy = Policy(cfg, model_dir, torch.device("cpu"))
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tokenizer.chat_template = cfg.chat_template
    tools = json.loads(pq.read_table(sft_data).slice(0, 1).to_pylist()[0]["tools"])
    val = cases(tokenizer, tools, pq.read_table(here / config["data"]["val"]).to_pylist())
    train_rows = pq.read_table(here / config["data"]["train"]).to_pylist()[: args.train_rows]
    train = cases(tokenizer, tools, train_rows) if train_rows else []
    at = {int(s) for s in args.at.split(",") if s} or {cfg.sft_steps}
    t0 = time.time()
    sft_cpu = [0.0]

    def report(step: int) -> None:
        c = cpu_s()
        print(f"step {step}", flush=True)
        print(fmt("val  ", measure(policy, val, explain=args.explain)), flush=True)
        if train:
            print(fmt("train", measure(policy, train, explain=args.explain)), flush=True)
        print(f"  (measuring: {cpu_s() - c:.0f} CPU-s)", flush=True)

    if 0 in at:
        report(0)
    last = [cpu_s()]

    def on_step(m: dict[str, float]) -> None:
        step = int(m["sft_step"])
        sft_cpu[0] += cpu_s() - last[0]
        print(
            f"sft {step:3d} loss {m['sft_loss']:.3f}  {sft_cpu[0] / step:.1f} CPU-s/step  ({time.time() - t0:.0f}s)",
            flush=True,
        )
        if step in at:
            report(step)
        last[0] = cpu_s()

    run_sft(policy, cfg, sft_data, on_step=on_step)
    if args.save:
        torch.save(policy.trainable_state(), args.save)


if __name__ == "__main__":
    main()

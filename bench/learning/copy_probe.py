"""Does the warm start teach the quick start's model to copy? A diagnostic for `trainer.sft`.

Runs the run config's SFT warm start alone (the learner's own `run_sft`, same model, data, seed and schedule) and,
every `--every` steps, checks on the 64 validation questions whether greedy decoding would copy exactly:
`call` = the whole tool call (operands copied from the question), `box` = the whole `\\boxed{...}` answer (the result
copied from the tool turn). Teacher-forced argmax over a correct demonstration equals greedy decoding's output
exactly when every token matches, so this needs no sampling. Measured at the whole prompt (`full`) and at the
sequence-length warmup's cut (`short`), to see when copying forms and whether it carries to the whole prompt.

    gpu-worker/.venv/bin/python bench/learning/copy_probe.py --seed 2 [--every 50] [key=value ...]

`key=value` overrides the run config as `toolrl train` does (e.g. `trainer.sft.warmup_steps=0`).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import torch
import yaml
from transformers import AutoTokenizer

from toolrl_learner.config import LearnerConfig
from toolrl_learner.train.policy import Policy, resolve_model_dir
from toolrl_learner.train.sft import run_sft, tokenize_demonstration

REPO = Path(__file__).resolve().parents[2]
QUESTION = re.compile(r"What is (\d+) (plus|minus) (\d+)\?")


def override(config: dict[str, Any], assignment: str) -> None:
    key, _, value = assignment.partition("=")
    *path, last = key.split(".")
    node = config
    for part in path:
        node = node.setdefault(part, {})
    node[last] = yaml.safe_load(value)


def probes(tokenizer, tools: list[dict], rows: list[dict]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """For each validation question: a correct demonstration's ids and its two assistant spans (call, answer)."""
    out = []
    for row in rows:
        question = row["prompt"][0]["content"]
        m = QUESTION.fullmatch(question)
        if m is None:
            raise ValueError(f"not a quick-start question: {question!r}")
        a, op, b = m.groups()
        answer = row["reward_model"]["ground_truth"]
        call = {"name": "calculator", "arguments": {"expression": f"{a} {'+' if op == 'plus' else '-'} {b}"}}
        messages = [
            row["prompt"][0],
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
            {"role": "tool", "name": "calculator", "content": answer},
            {"role": "assistant", "content": f"\\boxed{{{answer}}}"},
        ]
        ids, mask = tokenize_demonstration(tokenizer, {"messages": messages, "tools": tools})
        spans, i = [], 0
        while i < len(mask):
            if mask[i]:
                j = i
                while j < len(mask) and mask[j]:
                    j += 1
                spans.append((i, j))
                i = j
            else:
                i += 1
        out.append((ids, spans))
    return out


@torch.no_grad()
def exact(policy: Policy, cases, cut: int | None) -> tuple[float, float]:
    """Fractions of questions whose call / answer greedy decoding reproduces exactly (context cut to `cut`)."""
    hits = [0, 0]
    policy.base.eval()
    for ids, spans in cases:
        if cut is not None:
            start = max(0, spans[0][0] - cut)
            ids, spans = ids[start:], [(s - start, e - start) for s, e in spans]
        tokens = torch.tensor([ids])
        predicted = policy.base.forward_batch(tokens)[0].argmax(-1)
        for k, (s, e) in enumerate(spans[:2]):
            hits[k] += bool((predicted[s - 1 : e - 1] == tokens[0, s:e]).all())
    policy.base.train()
    return hits[0] / len(cases), hits[1] / len(cases)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(REPO / "examples/quickstart/run.yaml"))
    ap.add_argument("--seed", type=int, default=0, help="trainer.seed (the model's weights and the batches)")
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/toolrl-copy-probe")
    ap.add_argument("overrides", nargs="*", help="key=value on the run config")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    config_path = Path(args.config).resolve()
    config = yaml.safe_load(config_path.read_text())
    config["trainer"]["seed"] = args.seed
    for assignment in args.overrides:
        override(config, assignment)
    cfg = LearnerConfig.from_run_config(config)
    here = config_path.parent
    sft_data = here / config["trainer"]["sft"]["data"]
    workdir = Path(args.workdir) / f"seed-{args.seed}"
    workdir.mkdir(parents=True, exist_ok=True)
    model_dir = resolve_model_dir(config["model"]["path"], workdir, args.seed)
    policy = Policy(cfg, model_dir, torch.device("cpu"))
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tools = json.loads(pq.read_table(sft_data).slice(0, 1).to_pylist()[0]["tools"])
    cases = probes(tokenizer, tools, pq.read_table(here / config["data"]["val"]).to_pylist())
    t0 = time.time()

    def on_step(m: dict[str, float]) -> None:
        step = int(m["sft_step"])
        if step % args.every and step != cfg.sft_steps:
            return
        call, box = exact(policy, cases, None)
        short_call, short_box = exact(policy, cases, cfg.sft_context_warmup_tokens)
        print(
            f"step {step:4d} loss {m['sft_loss']:.3f}  full: call {call:.2f} box {box:.2f}"
            f"  short: call {short_call:.2f} box {short_box:.2f}  ({time.time() - t0:.0f}s)",
            flush=True,
        )

    run_sft(policy, cfg, sft_data, on_step=on_step)


if __name__ == "__main__":
    main()

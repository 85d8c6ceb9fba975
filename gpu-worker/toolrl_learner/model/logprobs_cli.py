"""`python -m toolrl_learner logprobs --model DIR --input FILE [--temperature T] [--json]`: the learner's log-probs.

For parity checks between the rollout engine and the learner. Accepted inputs (JSON file, `-` for stdin):
  1. What `toolrl generate --json` prints:
       {"prompt_token_ids": [...], "samples": [{"token_ids": [...], "logprobs": [...]?, ...}]}
     -> {"samples": [{"logprobs": [...]}]}: log p(token_ids[i] | prompt + token_ids[:i]), one per sample token.
  2. Trajectories (multi-turn, tool results inside), as RolloutTrajectory / Trajectory carry them:
       {"tokenIds": [...], "lossMask": [...], "behaviorLogprobs": [...]?}, a list of those, or an object with
       "trajectories": [...] (a scored group)
     -> {"samples": [{"logprobs": [...]}]}: aligned with tokenIds, the learner's log-prob where lossMask is 1
        and 0 elsewhere (the behaviorLogprobs convention).
  When the input carries the engine's own log-probs (samples[].logprobs or behaviorLogprobs), each output
  sample also has "maxAbsDiff": the largest |learner - engine| over the scored tokens.
All log-probs are under logits / temperature, in fp32.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _sequences(doc: Any) -> list[dict]:
    """-> [{"ids": [...], "score": [positions scored], "engine": [engine logprobs at those positions] | None,
    "aligned": bool (output aligned to all ids, 0 where unscored)}]"""
    if isinstance(doc, dict) and "samples" in doc and "prompt_token_ids" in doc:
        prompt = list(doc["prompt_token_ids"])
        out = []
        for i, s in enumerate(doc["samples"]):
            if "token_ids" not in s:
                raise ValueError(f"samples[{i}] has no token_ids")
            ids = prompt + list(s["token_ids"])
            engine = s.get("logprobs")
            out.append(
                {"ids": ids, "score": list(range(len(prompt), len(ids))), "engine": engine, "aligned": False}
            )
        return out
    trajs = doc.get("trajectories") if isinstance(doc, dict) and "trajectories" in doc else doc
    if isinstance(trajs, dict):
        trajs = [trajs]
    if not isinstance(trajs, list) or not trajs:
        raise ValueError(
            "input is neither `toolrl generate --json` output ({prompt_token_ids, samples}) nor trajectories "
            "({tokenIds, lossMask}, a list of them, or {trajectories: [...]})"
        )
    out = []
    for i, t in enumerate(trajs):
        if not isinstance(t, dict) or "tokenIds" not in t or "lossMask" not in t:
            raise ValueError(f"trajectory {i} needs tokenIds and lossMask")
        ids, mask = list(t["tokenIds"]), list(t["lossMask"])
        if len(mask) != len(ids):
            raise ValueError(f"trajectory {i}: lossMask has {len(mask)} entries, tokenIds {len(ids)}")
        score = [j for j, m in enumerate(mask) if m]
        behavior = t.get("behaviorLogprobs")
        engine = [behavior[j] for j in score] if behavior is not None else None
        out.append({"ids": ids, "score": score, "engine": engine, "aligned": True})
    return out


def compute(model, seqs: list[dict], temperature: float) -> list[dict]:
    import torch

    from .logprobs import token_logprobs
    from .modeling import pack

    for i, s in enumerate(seqs):
        if 0 in s["score"]:
            raise ValueError(f"sample {i}: the first token has no context to score it (empty prompt?)")
        bad = [t for t in s["ids"] if not 0 <= t < model.config.vocab_size]
        if bad:
            raise ValueError(
                f"sample {i}: token id {bad[0]} outside the vocabulary (0..{model.config.vocab_size - 1})"
            )
    ids, pos, cu = pack([torch.tensor(s["ids"], dtype=torch.long) for s in seqs])
    with torch.no_grad():
        hidden = model.forward_hidden(ids, pos, cu)
        # Position t predicts token t+1: score hidden[t-1] against ids[t].
        starts = cu[:-1].tolist()
        rows = torch.tensor(
            [starts[i] + j - 1 for i, s in enumerate(seqs) for j in s["score"]], dtype=torch.long
        )
        targets = torch.tensor([s["ids"][j] for s in seqs for j in s["score"]], dtype=torch.long)
        lp, _ = token_logprobs(hidden[rows], model.lm_head_weight(), targets, temperature)
    results, k = [], 0
    for s in seqs:
        n = len(s["score"])
        vals = lp[k : k + n].tolist()
        k += n
        if s["aligned"]:
            full = [0.0] * len(s["ids"])
            for j, v in zip(s["score"], vals, strict=True):
                full[j] = v
            entry: dict[str, Any] = {"logprobs": full}
        else:
            entry = {"logprobs": vals}
        if s["engine"] is not None:
            if len(s["engine"]) != n:
                raise ValueError(f"engine log-probs have {len(s['engine'])} entries for {n} scored tokens")
            entry["maxAbsDiff"] = max(
                (abs(a - b) for a, b in zip(vals, s["engine"], strict=True)), default=0.0
            )
        results.append(entry)
    return results


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner logprobs", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--model", required=True, help="Hugging Face model folder")
    p.add_argument("--input", required=True, help="JSON file (generate output or trajectories); - for stdin")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument(
        "--json", action="store_true", help="print the JSON result (default: a one-line summary per sample)"
    )
    args = p.parse_args(argv)
    if args.temperature <= 0:
        p.error("--temperature must be > 0")
    try:
        raw = sys.stdin.read() if args.input == "-" else open(args.input).read()
        seqs = _sequences(json.loads(raw))
    except (OSError, json.JSONDecodeError, ValueError) as e:
        p.error(f"--input: {e}")
    from .hf_io import load_pretrained

    model = load_pretrained(args.model).eval()
    try:
        results = compute(model, seqs, args.temperature)
    except ValueError as e:
        p.error(str(e))
    if args.json:
        print(json.dumps({"samples": results}))
        return 0
    for i, (s, r) in enumerate(zip(seqs, results, strict=True)):
        vals = [r["logprobs"][j] for j in s["score"]] if s["aligned"] else r["logprobs"]
        diff = f"  maxAbsDiff {r['maxAbsDiff']:.2e}" if "maxAbsDiff" in r else ""
        mean = sum(vals) / len(vals) if vals else 0.0
        print(f"sample {i}: {len(vals)} tokens, mean logprob {mean:.4f}{diff}")
    return 0

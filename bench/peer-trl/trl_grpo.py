"""The TRL side of bench/peer-trl: TRL's GRPOTrainer with its own multi-turn tool loop (`tools=`), on the weights,
data, hyperparameters and chat template toolrl's run used; the calculator and the `toolcall` reward are toolrl's own,
reached through bench/peer-trl/bridge.ts. Run by bench/peer-trl/index.ts in .cache/peer-trl-venv:

    python bench/peer-trl/trl_grpo.py SPEC.json     (SPEC: what index.ts's trlSpec() writes)

Writes SPEC["out"]/result.json: the wall-clock of every step and validation, the step metrics TRL logged, and the
validation accuracy (toolcall/final_answer, the component toolrl's validation reports as accuracy) at each one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import torch
import transformers
import trl
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen3_template

# The template's tool list loops over `tools`; TRL builds `tools` from the Python function's signature and
# docstring, which adds keys (a parameter description, `return`) toolrl's prompt does not have. Looping over the
# run config's own tool schemas instead gives the prompt toolrl's rollouts render, token for token (checked below).
TOOLS_LOOP = "{%- for tool in tools %}"
PEER_TOOLS_LOOP = "{%- for tool in (peer_tools if peer_tools is defined else tools) %}"


class Bridge:
    """One bridge.ts process; requests are answered in order, one line each."""

    def __init__(self, cmd: list[str], cwd: str):
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lock = threading.Lock()
        self.seconds = 0.0

    def ask(self, request: dict) -> dict:
        t = time.perf_counter()
        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        self.seconds += time.perf_counter() - t
        if not line:
            raise RuntimeError(f"bridge exited ({self.proc.poll()}) on {request.get('op')}")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def rows(path: str) -> list[dict]:
    """verl rows as TRL reads them: the chat `prompt` as it is, the ground truth beside it."""
    out = []
    for r in pq.read_table(path).to_pylist():
        out.append({"prompt": r["prompt"], "ground_truth": r["reward_model"]["ground_truth"]})
    return out


def cpu_bf16_unit() -> str | None:
    """The CPU's bf16 matrix unit, by the rule toolrl's learner follows (train/precision.py), or None: none on a CPU
    without one, nor for AVX512-BF16 on an Intel core without AMX (slower than fp32 there)."""
    try:
        caps = torch.cpu.get_capabilities()
    except (AttributeError, RuntimeError):
        return None
    intel = str(caps.get("cpu_name") or "").startswith("Intel")
    if caps.get("avx512_bf16") and not caps.get("amx_bf16") and intel:
        return None
    return next(
        (n for f, n in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16")) if caps.get(f)), None
    )


def continue_adapter(base, adapter_dir: str, want: dict):
    """The warm start's LoRA adapter on its base, trainable, as TRL continues it; refused when it is not the run
    config's LoRA (rank, alpha, target modules, layers: what trl-config.ts's trlLora derives)."""
    from peft import PeftModel

    model = PeftModel.from_pretrained(base, adapter_dir, is_trainable=True)
    got = model.peft_config["default"]
    have = {
        "r": got.r,
        "lora_alpha": got.lora_alpha,
        "target_modules": sorted(got.target_modules or []),
        "layers_to_transform": list(got.layers_to_transform)
        if isinstance(got.layers_to_transform, (list, tuple))
        else ([got.layers_to_transform] if got.layers_to_transform is not None else None),
    }
    for key, value in have.items():
        expected = want.get(key)
        if key == "lora_alpha" and expected is not None:
            same = float(value) == float(expected)
        else:
            same = value == expected
        if not same:
            raise SystemExit(
                f"{adapter_dir}: the adapter's {key} is {value!r}, the run config's LoRA has {expected!r}"
            )
    return model


def watch_autocast(model) -> dict[str, set[str]]:
    """Where TRL's forward passes run under CPU autocast, and in which dtype: a hook on the last decoder layer
    notes it for forwards without gradients (generation; old log-probs when TRL needs them) and with them
    (training)."""
    seen: dict[str, set[str]] = {"noGrad": set(), "grad": set()}
    layers = [
        m for n, m in model.named_modules() if n.endswith("layers") and isinstance(m, torch.nn.ModuleList)
    ]

    def hook(_module, _inputs):
        on = torch.is_autocast_enabled("cpu")
        kind = str(torch.get_autocast_dtype("cpu")).removeprefix("torch.") if on else "float32"
        seen["grad" if torch.is_grad_enabled() else "noGrad"].add(kind)

    if layers:
        layers[0][-1].register_forward_pre_hook(hook)
    return seen


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(spec["seed"])
    bridge = Bridge(spec["bridge"], spec["repo"])

    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: the arithmetic expression
        """
        return bridge.ask(
            {
                "op": "call",
                "name": "calculator",
                "arguments": {"expression": expression},
            }
        )["text"]

    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    # model.chat_template: the text toolrl's rollouts and warm start rendered with.
    if spec.get("chatTemplate"):
        tokenizer.chat_template = spec["chatTemplate"]
    if TOOLS_LOOP not in tokenizer.chat_template:
        raise SystemExit(
            f"{spec['model']}: the chat template has no `{TOOLS_LOOP}` to point at the run's tools"
        )
    tokenizer.chat_template = tokenizer.chat_template.replace(TOOLS_LOOP, PEER_TOOLS_LOOP)
    # toolrl's template writes Qwen's Hermes-style calls; TRL knows how to parse them by Qwen's response template.
    tokenizer.response_template = qwen3_template
    template_kwargs = {"peer_tools": spec["toolSchemas"]}

    train, val = rows(spec["train"]), rows(spec["val"])
    # The same prompt tokens as toolrl's rollout, or the comparison is off: checked on a prompt toolrl sampled.
    ref = spec.get("promptCheck")
    if ref:
        found = [r["prompt"] for r in train + val if r["prompt"][-1]["content"] == ref["content"]]
        if not found:
            raise SystemExit(
                f"no row of {spec['train']} or {spec['val']} asks {ref['content']!r}, which toolrl sampled"
            )
        messages = found[0]
        ids = tokenizer.apply_chat_template(
            messages,
            tools=[calculator],
            add_generation_prompt=True,
            tokenize=True,
            **template_kwargs,
        )
        ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        if ids != ref["tokenIds"]:
            raise SystemExit(
                "TRL's prompt differs from toolrl's for the same row:\n"
                f"  trl    {tokenizer.decode(ids)!r}\n  toolrl {tokenizer.decode(ref['tokenIds'])!r}"
            )

    stash: dict[str, list[float]] = {}

    def toolcall(prompts, completions, completion_ids, ground_truth, **_):
        texts = [tokenizer.decode(ids, skip_special_tokens=False) for ids in completion_ids]
        episodes = [{"completion": t, "groundTruth": g} for t, g in zip(texts, ground_truth, strict=True)]
        scores = bridge.ask({"op": "score", "episodes": episodes})["scores"]
        stash["accuracy"] = [s["components"]["toolcall/final_answer"] for s in scores]
        return [s["score"] for s in scores]

    def accuracy(prompts, completions, **_):
        # Weight 0: logged (validation accuracy), not trained on; toolcall above scored the same batch just before.
        return stash.pop("accuracy")

    model = AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32)
    if spec.get("adapter"):
        model = continue_adapter(model, spec["adapter"], spec.get("lora") or {})
    grpo = dict(spec["grpo"])
    timeline: dict = {"steps": [], "evals": [], "logs": []}
    if grpo.get("bf16") and cpu_bf16_unit() is None:
        grpo["bf16"] = False  # as toolrl's learner: bf16 only where the CPU's bf16 units are faster
    autocast = watch_autocast(model)
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        chat_template_kwargs=template_kwargs,
        reward_weights=[1.0, 0.0],
        **grpo,
    )

    class Timing(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            timeline["steps"].append({"step": state.global_step, "t": time.time()})

        def on_log(self, args, state, control, logs=None, **kwargs):
            timeline["logs"].append({"step": state.global_step, "t": time.time(), **(logs or {})})

    class Trainer(GRPOTrainer):
        def evaluate(self, *a, **kw):
            t0 = time.time()
            metrics = super().evaluate(*a, **kw)
            timeline["evals"].append(
                {
                    "step": self.state.global_step,
                    "start": t0,
                    "end": time.time(),
                    "accuracy": metrics.get("eval_rewards/accuracy/mean"),
                    "reward": metrics.get("eval_rewards/toolcall/mean"),
                    "toolCalls": metrics.get("eval_tools/call_frequency"),
                }
            )
            return metrics

    trainer = Trainer(
        model=model,
        reward_funcs=[toolcall, accuracy],
        args=args,
        train_dataset=Dataset.from_list(train),
        eval_dataset=Dataset.from_list(val),
        processing_class=tokenizer,
        tools=[calculator],
        callbacks=[Timing()],
    )
    timeline["threads"] = torch.get_num_threads()
    trainer.evaluate()  # v0: the warm-started policy, as toolrl validates it before its first step
    timeline["trainStart"] = time.time()
    trainer.train()
    timeline["trainEnd"] = time.time()
    if not timeline["evals"] or timeline["evals"][-1]["step"] != trainer.state.global_step:
        trainer.evaluate()
    timeline["bridgeSeconds"] = bridge.seconds
    timeline["precision"] = {
        "bf16": bool(grpo.get("bf16")),
        "cpuBf16Unit": cpu_bf16_unit(),
        "autocast": {k: sorted(v) for k, v in autocast.items()},
    }
    timeline["trainableParameters"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    bridge.close()
    timeline["versions"] = {
        "trl": trl.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
    }
    (out / "result.json").write_text(json.dumps(timeline, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python bench/peer-trl/trl_grpo.py SPEC.json")
    main(sys.argv[1])

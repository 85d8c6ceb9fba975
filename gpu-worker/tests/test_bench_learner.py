"""bench/learner's scripts without a GPU: the GPU plan's dry run (its steps, and that every flag it passes is one its
scripts take) and its table; the variant specs of run.py's children."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "learner"


def _module(name: str):
    sys.path.insert(0, str(BENCH))  # the scripts import their siblings (shapes.py) by name
    try:
        spec = importlib.util.spec_from_file_location(f"bench_learner_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_gpu_plan_dry_run_lists_every_step_with_flags_its_scripts_take():
    out = subprocess.run(
        [sys.executable, str(BENCH / "gpu_plan.py"), "--dry-run"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for shape in ("smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b"):
        assert any(
            line.startswith(f"learner {shape}:") and "run.py --device cuda" in line for line in lines
        ), shape
    assert any(
        line.startswith("sharded qwen2.5-1.5b:") and "sharded.py --device cuda" in line for line in lines
    )
    assert any(line.startswith("plan:") and "memory_plan.py --device cuda" in line for line in lines)
    assert any(line.startswith("tests:") and "-k cuda" in line for line in lines)
    assert "| smollm2-135m | - | not run |" in out.stdout


def test_gpu_plan_dry_run_refuses_a_flag_a_script_does_not_take(monkeypatch, capsys):
    plan = _module("gpu_plan")
    real = plan.steps

    def with_a_stale_flag(python, gpus, shapes):
        name, cmd, limit = real(python, gpus, shapes)[1]
        return [(name, [*cmd, "--no-such-flag"], limit)]

    monkeypatch.setattr(plan, "steps", with_a_stale_flag)
    monkeypatch.setattr(sys, "argv", ["gpu_plan.py", "--dry-run"])
    assert plan.main() == 1
    assert "--no-such-flag" in capsys.readouterr().err


def test_gpu_plan_table_reads_run_and_sharded_reports():
    plan = _module("gpu_plan")
    learner = {
        "device": "cuda",
        "shapes": {
            "qwen2.5-0.5b": {
                "reference": {"tokens_per_s": 40000.0, "mfu": 0.21, "peak_gb": 30.0, "working_gb": 22.1},
                "ours": {
                    "speedup": 1.8,
                    "peak_memory_ratio": 0.4,
                    "tokens_per_s": 72000.0,
                    "mfu": 0.378,
                    "peak_gb": 12.0,
                    "working_gb": 4.1,
                },  # fmt: skip
                "ours[ckpt]": {"oom": "CUDA out of memory."},
            }
        },
    }
    sharded = {"one": {"ranks": 1, "tokens_per_s": 30000.0, "mfu": 0.3, "peak_gb": 20.0}}
    sharded |= {"many": {"ranks": 1, "tokens_per_s": 30000.0}, "speedup": 1.0}
    results = {
        "learner qwen2.5-0.5b": {"rc": 0, "json": learner},
        "learner qwen2.5-1.5b": {"rc": 124, "timed_out": True},
        "sharded qwen2.5-1.5b": {"rc": 0, "json": sharded},
    }
    text = plan.table(results, "1 x H200")
    assert "| qwen2.5-0.5b | Hugging Face step | 40,000 | 21.0% | 30.00 | 22.10 | 1.00x | 1.00 |" in text
    assert "| qwen2.5-0.5b | ours | 72,000 | 37.8% | 12.00 | 4.10 | 1.80x | 0.40 |" in text
    assert "| qwen2.5-0.5b | ours[ckpt] | CUDA out of memory. |" in text
    assert "| qwen2.5-1.5b | - | failed (exit 124, time limit) |" in text
    assert "| smollm2-135m | - | not run |" in text
    assert "| qwen2.5-1.5b | 1 | 30,000 | 30.0% | 20.00 | 1.00x |" in text
    assert text.count("| qwen2.5-1.5b | 1 |") == 1  # one GPU: the single-rank run once


def test_run_variant_specs_set_the_learner_options():
    child = _module("child")

    class Args:
        grad_ckpt, chunk, micro_batch_tokens = False, 256, 1024

    spec = child.parse_spec("fp32+ckpt+lora16+chunk=512+mbt=2048+keep=0+attn=sdpa", Args())
    assert spec == {
        "dtype": "fp32",
        "grad_ckpt": True,
        "lora_rank": 16,
        "attention": "sdpa",
        "chunk": 512,
        "micro_batch_tokens": 2048,
        "keep_mib": 0,
        "undo": [],
        "jemalloc": False,
    }
    assert child.parse_spec("lora16+jemalloc", Args())["jemalloc"] is True
    # each of the learner's CPU choices undone on its own, to measure what it gives
    assert child.parse_spec("attn-bf16+adam-foreach", Args())["undo"] == ["attn-bf16", "adam-foreach"]
    assert child.parse_spec("default", Args())["dtype"] == "bf16"
    with pytest.raises(SystemExit, match="unknown setting 'fp16'"):
        child.parse_spec("fp16", Args())

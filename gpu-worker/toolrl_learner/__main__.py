"""`python -m toolrl_learner <command> ...`: each command lives in its own module, imported on use."""

from __future__ import annotations

import importlib
import logging
import os
import sys

# command -> (module with `main(argv) -> int`, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "tiny": ("toolrl_learner.model.tiny_cli", "write a tiny model folder (HF format, tokenizer included)"),
    "model": (
        "toolrl_learner.model.model_cli",
        "install a built-in pretrained model (smollm2-135m-instruct) or convert a .gguf file",
    ),
    "export": ("toolrl_learner.export.cli", "export a model folder as an ONNX rollout bundle"),
    "logprobs": (
        "toolrl_learner.model.logprobs_cli",
        "the learner's log-probs of `toolrl generate --json` samples",
    ),
    "stdio": (
        "toolrl_learner.drivers.stdio",
        "learner driven over JSON lines on stdin/stdout (embedded runtime)",
    ),
    "sqs": ("toolrl_learner.drivers.sqs", "learner polling the scored-groups SQS queue (LocalStack, AWS)"),
    "offline": ("toolrl_learner.drivers.offline", "train from a JSONL file of scored groups"),
    "plot": (
        "toolrl_learner.train.plot_cli",
        "redraw a run's reward_curve.png (reward and validation accuracy)",
    ),
    "plan": ("toolrl_learner.plan.cli", "whether a run config's learner fits its GPUs (memory plan)"),
    "launch": (
        "toolrl_learner.sharded.launch",
        "run stdio or sqs as N processes under torchrun (FSDP2 sharded learner)",
    ),
}

# The commands that train: they run with jemalloc preloaded where it is found (allocator.py).
TRAINING = frozenset({"stdio", "sqs", "offline", "launch"})


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m toolrl_learner <command> [args]\n\ncommands:")
        for name, (_, doc) in COMMANDS.items():
            print(f"  {name:<10} {doc}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"toolrl_learner: unknown command {name!r}; one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    if name in TRAINING:
        from . import allocator

        try:
            allocator.reexec_with_jemalloc()  # returns when there is nothing to do
        except ValueError as e:
            print(f"toolrl_learner: {e}", file=sys.stderr)
            return 2
        said = allocator.describe(os.environ)
        if said:
            print(f"toolrl_learner: {said}", file=sys.stderr, flush=True)
    from .lifeline import die_with_parent

    die_with_parent()
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


def exit_rank(code: int) -> None:
    """A torchrun rank leaves without the interpreter's teardown: its output flushed, then os._exit. Tearing down
    gloo's and the background threads' C++ state after the work is done sometimes aborted a finished rank
    ("terminate called without an active exception", exit -6 on a loaded machine), and torchrun then failed the
    whole run although every step, checkpoint and line had been written."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        exit_rank(code)
    sys.exit(code)

"""`python -m toolrl_learner launch [--nproc-per-node N] COMMAND ...`: a learner driver (stdio, sqs) as N
processes per node under torchrun (`torch.distributed.run`), one per GPU, or on CPU with `--device cpu`.

What this adds to torchrun: on an AWS Batch multi-node parallel job it reads the node count, this node's
index and the main node's address from Batch's environment (AWS_BATCH_JOB_NUM_NODES, _NODE_INDEX,
_MAIN_NODE_PRIVATE_IPV4_ADDRESS); it refuses, with the numbers, more processes than GPUs; and it exits 143
when the job was stopped by SIGTERM and rank 0 checkpointed (the Batch job definition retries that code),
where torchrun itself would exit 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys

log = logging.getLogger("toolrl_learner.launch")
MASTER_PORT = 29500  # multi-node rendezvous on the main node (the learner's security group allows it)


def _main_node_address(env: dict[str, str]) -> str:
    """The main node's private address: Batch gives it to the child nodes; the main node uses its own."""
    addr = env.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS")
    if addr:
        return addr
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def torchrun_args(nproc: int, command: list[str], env: dict[str, str]) -> list[str]:
    """torchrun's argument list for `command` (a toolrl_learner command and its flags)."""
    nnodes = int(env.get("AWS_BATCH_JOB_NUM_NODES", "1"))
    if nnodes > 1:
        node = int(env["AWS_BATCH_JOB_NODE_INDEX"])
        main = int(env.get("AWS_BATCH_JOB_MAIN_NODE_INDEX", "0"))
        # torchrun's node rank 0 hosts the rendezvous store: Batch's main node, whatever its index.
        rank = 0 if node == main else node + (1 if node < main else 0)
        where = [
            f"--nnodes={nnodes}",
            f"--node-rank={rank}",
            f"--master-addr={_main_node_address(env)}",
            f"--master-port={MASTER_PORT}",
        ]
    else:
        where = ["--standalone"]  # a free port on this machine, no fixed one
    return [*where, f"--nproc-per-node={nproc}", "--max-restarts=0", "--module", "toolrl_learner", *command]


def _wants_cpu(command: list[str]) -> bool:
    for i, a in enumerate(command):
        if a == "--device" and i + 1 < len(command):
            return command[i + 1] == "cpu"
        if a.startswith("--device="):
            return a.split("=", 1)[1] == "cpu"
    return False


def _fail(command: list[str], message: str) -> int:
    log.error("%s", message)
    if command and command[0] == "stdio":  # the embedded runtime reads the reason from the protocol
        print(json.dumps({"type": "error", "message": message}), flush=True)
    return 2


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m toolrl_learner launch", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--nproc-per-node", type=int, required=True, help="learner processes on this node (GPUs)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the learner command and its flags (stdio, sqs)")
    args = p.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or command[0] not in ("stdio", "sqs"):
        p.error("give the learner command to run: stdio ... or sqs ...")
    if args.nproc_per_node < 1:
        p.error("--nproc-per-node must be >= 1")
    import torch

    if not _wants_cpu(command) and torch.cuda.device_count() < args.nproc_per_node:
        return _fail(
            command,
            f"the learner asks for {args.nproc_per_node} GPU processes (trainer.num_gpus or --nproc-per-node) "
            f"but this machine has {torch.cuda.device_count()} GPUs; to run {args.nproc_per_node} CPU processes "
            "(gloo) instead, pass --device cpu (`toolrl train --learner-device cpu`)",
        )
    if "OMP_NUM_THREADS" not in os.environ:
        # torchrun would set 1; CPU ranks share the cores instead.
        os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // args.nproc_per_node))
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun

    try:
        torchrun(torchrun_args(args.nproc_per_node, command, dict(os.environ)))
        return 0
    except SignalException as e:
        log.warning("stopped by %s; the ranks were sent it and rank 0 checkpointed", e.sigval.name)
        return 143
    except ChildFailedError as e:
        codes = {rank: f.exitcode for rank, f in e.failures.items()}
        log.error("learner ranks failed: %s", codes)
        if all(c in (143, -15) for c in codes.values()):
            return 143
        if any(c < 0 for c in codes.values()):
            # A rank killed by a signal wrote no error, and torchrun stops the others, sometimes before rank 0 has
            # written why: say it here, so the run is told even then (the embedded runtime keeps the first error
            # line, rank 0's when it wrote one).
            _fail(
                command, "learner ranks failed: " + ", ".join(_exit(r, c) for r, c in sorted(codes.items()))
            )
        return 1


def _exit(rank: int, code: int) -> str:
    """'rank 1 killed by SIGKILL' or 'rank 1 exited with code 2'."""
    if code < 0:
        try:
            return f"rank {rank} killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"rank {rank} exited with code {code}"

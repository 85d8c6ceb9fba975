"""The sqs driver against LocalStack (S3 + SQS): messages are deleted only after the checkpoint that
covers their group, visibility is extended while training runs, another run's messages are forwarded to its
learner (never handed back toward the dead-letter queue), bad ones are dead-lettered with their reason, and a
killed learner's uncommitted groups come back.

Runs where LocalStack is: `scripts/e2e.sh` exports AWS_ENDPOINT_URL (skipped in the CPU suite otherwise).
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from hang import HANG_S

from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train.synthetic import group, trajectory

pytestmark = pytest.mark.skipif(
    not os.environ.get("AWS_ENDPOINT_URL"), reason="needs LocalStack (scripts/e2e.sh)"
)
RUN = "r-sqs"


@pytest.fixture()
def aws(tmp_path):
    import boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    s3 = boto3.client("s3", endpoint_url=endpoint)
    sqs = boto3.client("sqs", endpoint_url=endpoint)
    suffix = uuid.uuid4().hex[:8]
    bucket = f"toolrl-learner-test-{suffix}"
    s3.create_bucket(Bucket=bucket)
    dlq = sqs.create_queue(QueueName=f"scored-groups-dlq-{suffix}")["QueueUrl"]
    queue = sqs.create_queue(QueueName=f"scored-groups-{suffix}")["QueueUrl"]
    model = build_tiny(
        tmp_path / "model", TinySpec(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1)
    )
    yield {
        "s3": s3,
        "sqs": sqs,
        "bucket": bucket,
        "queue": queue,
        "dlq": dlq,
        "model": model,
        "tmp": tmp_path,
    }
    for q in (queue, dlq):
        sqs.delete_queue(QueueUrl=q)
    for obj in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=obj["Key"])
    s3.delete_bucket(Bucket=bucket)


def _put_run(aws, planned, run=RUN, status="running"):
    config = {
        "model": {"path": str(aws["model"]), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {
            "batch_prompts": 2,
            "save_every": 2,
            "publish_every": 2,
            "max_staleness": 10,
            "micro_batch_tokens": 256,
        },
        "logging": {"tensorboard": False},
    }
    body = json.dumps({"status": status, "config": config, "totals": {"groupsPlanned": planned}})
    aws["s3"].put_object(Bucket=aws["bucket"], Key=f"runs/{run}/run.json", Body=body)


def _send_group(aws, i, run=RUN, sha=None):
    g = group(run, f"e0-p{i}", [trajectory([5, 6, 7], [[10 + i, 11 + k]], float(k % 2)) for k in range(4)])
    raw = json.dumps(g).encode()
    key = f"runs/{run}/groups/e0-p{i}.json"
    aws["s3"].put_object(Bucket=aws["bucket"], Key=key, Body=raw)
    msg = {"schemaVersion": 1, "runId": run, "groupId": g["groupId"], "manifestKey": key,
           "sha256": sha or hashlib.sha256(raw).hexdigest()}  # fmt: skip
    aws["sqs"].send_message(QueueUrl=aws["queue"], MessageBody=json.dumps(msg))


def _learner(aws, *extra, run=RUN, stderr=None):
    cmd = [sys.executable, "-m", "toolrl_learner", "sqs", "--run-id", run, "--root", f"s3://{aws['bucket']}",
           "--queue-url", aws["queue"], "--dlq-url", aws["dlq"], "--wait", "1", "--device", "cpu",
           "--workdir", str(aws["tmp"] / f"work-{run}"), *extra]  # fmt: skip
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )


def _lines_until(proc, pred):
    lines = []
    for raw in proc.stdout:
        lines.append(json.loads(raw))
        if pred(lines[-1]):
            return lines
    raise AssertionError(f"learner exited ({proc.wait()}) early: {lines}")


def _count(aws, url):
    """(visible, in flight, delayed): queue attributes, nothing received."""
    attrs = aws["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(attrs["ApproximateNumberOfMessages"]),
        int(attrs["ApproximateNumberOfMessagesNotVisible"]),
        int(attrs["ApproximateNumberOfMessagesDelayed"]),
    )


def _browse(url):
    """The queue's visible messages through LocalStack's message browser, which answers ReceiveMessage without
    receiving (receive counts and visibility untouched): a test looks at a queue without changing it."""
    import boto3

    browser = boto3.client("sqs", endpoint_url=f"{os.environ['AWS_ENDPOINT_URL']}/_aws/sqs/messages")
    return browser.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])


def test_commit_deletes_and_bad_messages_are_dead_lettered_on_localstack(aws):
    _put_run(aws, planned=None)  # unknown: the learner runs until the queue has nothing for it
    for i in range(4):
        _send_group(aws, i)
    _put_run(aws, planned=4, run="another-run")  # live: its message is forwarded, kept for its learner
    _send_group(aws, 9, run="another-run")
    _put_run(aws, planned=4, run="ended-run", status="completed")  # ended: its message is deleted
    _send_group(aws, 7, run="ended-run")
    _send_group(aws, 6, run="no-such-run")  # no run.json: dead-lettered, naming the run
    _send_group(aws, 8, sha="0" * 64)
    aws["sqs"].send_message(QueueUrl=aws["queue"], MessageBody="{not json")
    # a visibility lease shorter than the run: only the heartbeat keeps the messages from coming back
    p = _learner(aws, "--visibility", "6", "--idle-exit", "8")
    lines = _lines_until(p, lambda m: m["type"] == "done")
    assert p.wait(timeout=HANG_S) == 0
    kinds = [(m["type"], m.get("groupId")) for m in lines if m["type"] in ("dropped", "committed")]
    assert ("dropped", "e0-p8") in kinds
    assert not [m for m in lines if m["type"] == "dropped" and m["reason"] == "duplicate"]
    committed = sorted(g for m in lines if m["type"] == "committed" for g in m["groupIds"])
    assert committed == ["e0-p0", "e0-p1", "e0-p2", "e0-p3"]
    # the queue keeps only the live run's message (forwarded, so perhaps delayed); the DLQ has the three bad ones
    assert sum(_count(aws, aws["queue"])) == 1
    dead = _browse(aws["dlq"])
    reasons = sorted(
        m["MessageAttributes"]["toolrl-dead-letter-reason"]["StringValue"] for m in dead["Messages"]
    )
    assert all(m["MessageAttributes"]["toolrl-source-queue"]["StringValue"].endswith(aws["queue"].rsplit("/", 1)[1])
               for m in dead["Messages"])  # fmt: skip
    assert len(reasons) == 3
    assert sum("sha256" in r for r in reasons) == 1
    assert "scored-group message of run 'no-such-run', which does not exist" in reasons
    assert sum(r.startswith("unreadable scored-group message") for r in reasons) == 1
    keys = {o["Key"] for o in aws["s3"].list_objects_v2(Bucket=aws["bucket"])["Contents"]}
    assert {f"runs/{RUN}/policy/LATEST.json", f"runs/{RUN}/learner/state.json",
            f"runs/{RUN}/checkpoints/step-2/COMPLETE.json", f"runs/{RUN}/metrics/metrics.jsonl"} <= keys  # fmt: skip


def test_killed_learner_gets_its_uncommitted_groups_back_on_localstack(aws):
    _put_run(aws, planned=6)
    for i in range(6):
        _send_group(aws, i)
    p = _learner(aws, "--visibility", "5")
    _lines_until(p, lambda m: m["type"] == "committed" and m["step"] == 2)
    _lines_until(p, lambda m: m["type"] == "step" and m["step"] == 3)  # trained, not committed
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=HANG_S)
    time.sleep(6)  # the lease of the uncommitted messages runs out
    assert sum(_count(aws, aws["queue"])) == 2  # e0-p4 and e0-p5 only: the first four were deleted
    p = _learner(aws, "--visibility", "30")
    lines = _lines_until(p, lambda m: m["type"] == "done")
    assert p.wait(timeout=HANG_S) == 0
    assert (
        lines[0] == {"type": "ready", "policyVersion": 1, "resumedFromStep": 2} or lines[1]["type"] == "ready"
    )
    assert [m["step"] for m in lines if m["type"] == "step"] == [3]
    assert sum(_count(aws, aws["queue"])) == 0


def test_two_runs_share_the_queue_and_neither_strands_the_others_groups_on_localstack(aws):
    """Two runs' learners on one scored-groups queue whose redrive policy dead-letters after 5 receives (the
    topology's). Learner B starts first, while only run A's groups are queued: it receives them again and again
    (handed back, they would pass 5 receives and be dead-lettered with no record, stranding run A). Forwarded as
    fresh messages, they wait for A's learner; then each learner trains exactly its own run's groups."""
    dlq_arn = aws["sqs"].get_queue_attributes(QueueUrl=aws["dlq"], AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})
    aws["sqs"].set_queue_attributes(QueueUrl=aws["queue"], Attributes={"RedrivePolicy": redrive})
    _put_run(aws, planned=2, run="run-a")
    _put_run(aws, planned=2, run="run-b")
    for i in range(2):
        _send_group(aws, i, run="run-a")
    b = _learner(aws, "--visibility", "30", run="run-b", stderr=subprocess.PIPE)
    forwards: list[str] = []  # B's log lines about A's messages, read on a thread so its stderr never fills

    def read_stderr() -> None:
        assert b.stderr is not None
        for line in b.stderr:
            if "forwarded a scored-group message of run run-a" in line:
                forwards.append(line)

    threading.Thread(target=read_stderr, daemon=True).start()
    a = None
    try:
        # B has passed each of A's messages on more often than the redrive policy allows receives (handed back,
        # they would be in the dead-letter queue by then)
        while len(forwards) < 12 and sum(_count(aws, aws["dlq"])) == 0 and b.poll() is None:
            time.sleep(0.2)
        assert sum(_count(aws, aws["dlq"])) == 0, _browse(aws["dlq"])
        assert len(forwards) >= 12
        for i in range(2):
            _send_group(aws, i, run="run-b")
        a = _learner(aws, "--visibility", "30", run="run-a")
        lines_a = _lines_until(a, lambda m: m["type"] == "done")
        lines_b = _lines_until(b, lambda m: m["type"] == "done")
        assert a.wait(timeout=HANG_S) == 0 and b.wait(timeout=HANG_S) == 0
    finally:
        for p in (b, a):
            if p is not None and p.poll() is None:
                p.kill()
    for lines in (lines_a, lines_b):
        committed = sorted(g for m in lines if m["type"] == "committed" for g in m["groupIds"])
        assert committed == ["e0-p0", "e0-p1"]
        assert not [m for m in lines if m["type"] == "dropped"]
    # every message was someone's: the queue is empty, nothing was dead-lettered
    assert sum(_count(aws, aws["queue"])) == 0
    assert sum(_count(aws, aws["dlq"])) == 0

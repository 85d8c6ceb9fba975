"""`python -m toolrl_learner sqs --run-id ID [--root s3://bucket] [--queue-url URL]`: the learner polling
the scored-groups queue (LocalStack, AWS). Blobs go through S3; AWS_ENDPOINT_URL selects LocalStack.

A received message stays in flight until the checkpoint covering its group is committed: a heartbeat
thread keeps extending its visibility, and only `committed` deletes it. A crash therefore redelivers
exactly the uncommitted groups. An unreadable message goes to the dead-letter queue with its reason. Events
are printed as stdio's lines.

Runs of one environment share the scored-groups queue, so a learner receives other runs' messages too. Handing
one back (visibility 0) would count a receive against it each time, and after the queue's maxReceiveCount SQS
would dead-letter it with no record, stranding that run's group. So a live run's message is forwarded instead:
sent again as a new message (receive count 0, a short delay so two learners do not bounce it in a tight loop)
and the received one deleted. A message of a run that has ended is deleted (nothing will train it), and one of
a run that does not exist is dead-lettered with that reason.
The learner counts the run's scored-group messages it takes off the queue (deleted after a commit, or
dead-lettered) in runs/<id>/queue-tally/learner-<hex>.json, as the stages count theirs: `toolrl status`
subtracts them from what the reward stage sent to show the run's messages in the queue.
Under torchrun only rank 0 talks to SQS; the other ranks follow it (sharded/session.py).
The group manifests of a receive are fetched all at once as it returns (`Prefetching`), not one by one as the
session takes them: a batch's reads are on the learner's path between two steps. The long poll is the learner's
`wait` phase, as stdio's read is.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contracts import constants, timestamp, validate
from ..storage import BlobNotFound, BlobStore, keys
from .common import LineWriter, SignalGuard, base_parser, drive, lead_or_follow, parse_args, protocol_stdout

if TYPE_CHECKING:
    from ..sharded.world import World
    from ..train.session import LearnerSession

log = logging.getLogger("toolrl_learner.sqs")
FORWARD_DELAY_S = 2  # another run's message is sent again with this delay
RUN_STATUS_TTL_S = 30.0  # how long another run's status is believed
# Message attributes of a dead-lettered message, as the pipeline names them (shared/ports/queue.ts ATTR).
ATTR_REASON, ATTR_SOURCE, ATTR_RECEIVES = (
    constants()["queueAttributes"][name] for name in ("deadLetterReason", "sourceQueue", "receiveCount")
)


class Prefetching:
    """A BlobStore whose `get_bytes` of a prefetched key answers from a read started earlier, on a pool of threads;
    every other call goes straight to the store. A failed read fails the `get_bytes` that takes it, as it would
    have without the prefetch."""

    def __init__(self, store: BlobStore, threads: int = 10) -> None:
        self.store = store
        self.describe = store.describe
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sqs-prefetch")
        self._reads: dict[str, Future[bytes]] = {}

    def prefetch(self, key: str) -> None:
        if key not in self._reads:
            self._reads[key] = self._pool.submit(self.store.get_bytes, key)

    def get_bytes(self, key: str) -> bytes:
        read = self._reads.pop(key, None)
        return read.result() if read is not None else self.store.get_bytes(key)

    def put_bytes(self, key: str, data: bytes) -> None:
        self.store.put_bytes(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        return self.store.put_if_absent(key, data)

    def exists(self, key: str) -> bool:
        return self.store.exists(key)

    def list(self, prefix: str) -> list[str]:
        return self.store.list(prefix)

    def delete(self, key: str) -> None:
        self.store.delete(key)

    def put_file(self, key: str, path: Path) -> None:
        self.store.put_file(key, path)

    def get_file(self, key: str, path: Path) -> None:
        self.store.get_file(key, path)

    def local_path(self, key: str) -> Path | None:
        return self.store.local_path(key)


class InFlight:
    """Receipt handles of received, not yet committed messages, by group id (a redelivery adds one)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.handles: dict[str, list[str]] = {}

    def add(self, group_id: str, handle: str) -> None:
        with self.lock:
            self.handles.setdefault(group_id, []).append(handle)

    def pop(self, group_ids: list[str]) -> list[str]:
        with self.lock:
            return [h for g in group_ids for h in self.handles.pop(g, [])]

    def all(self) -> list[str]:
        with self.lock:
            return [h for hs in self.handles.values() for h in hs]


class Heartbeat(threading.Thread):
    """Extends the visibility of every in-flight message every `period` seconds while training runs."""

    def __init__(self, client, queue_url: str, inflight: InFlight, visibility: int, period: float) -> None:
        super().__init__(daemon=True, name="sqs-heartbeat")
        self.client, self.queue_url, self.inflight = client, queue_url, inflight
        self.visibility, self.period = visibility, period
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.period):
            self.beat()

    def beat(self) -> None:
        handles = self.inflight.all()
        for i in range(0, len(handles), 10):
            entries = [
                {"Id": str(j), "ReceiptHandle": h, "VisibilityTimeout": self.visibility}
                for j, h in enumerate(handles[i : i + 10])
            ]
            try:
                resp = self.client.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
                for f in resp.get("Failed", []):
                    log.warning("visibility extension failed: %s", f.get("Message"))
            except Exception as e:  # noqa: BLE001 - a missed beat is retried on the next one
                log.warning("visibility extension failed: %s", e)


class SqsDriver:
    def __init__(
        self, client, queue_url: str, dlq_url: str | None, run_id: str, out: LineWriter, store: BlobStore
    ) -> None:
        self.client, self.queue_url, self.dlq_url, self.run_id, self.out, self.store = (
            client,
            queue_url,
            dlq_url,
            run_id,
            out,
            store,
        )
        self._run_status: dict[str, tuple[float, str | None]] = {}
        self.forwarded = 0
        self.inflight = InFlight()
        self.handle_of: dict[str, str] = {}  # last receipt handle per group, for dead-lettering
        self.body_of: dict[str, str] = {}
        self.receives_of: dict[str, str] = {}
        self._arn: str | None = None
        self.tally_writer = f"learner-{secrets.token_hex(6)}"
        self.handled = 0  # this run's messages taken off the queue: deleted after a commit, or dead-lettered
        self.prefetch: Prefetching | None = None  # the session's store, when it reads through one

    def count_handled(self, n: int) -> None:
        """Records n more of this run's messages off the queue in the run's queue tally (see the module doc)."""
        if n <= 0:
            return
        self.handled += n
        doc = {
            "schemaVersion": 1,
            "runId": self.run_id,
            "writer": self.tally_writer,
            "updatedAt": timestamp(),
            "queues": {"scored-groups": {"sent": 0, "handled": self.handled}},
        }
        validate("queue-tally", doc)
        try:
            self.store.put_bytes(
                keys.queue_tally(self.run_id, self.tally_writer), (json.dumps(doc) + "\n").encode()
            )
        except Exception as e:  # noqa: BLE001 - counts are for display; the next write carries these too
            log.warning("could not write the queue tally: %s", e)

    @property
    def queue_arn(self) -> str:
        if self._arn is None:
            attrs = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
            self._arn = str(attrs["Attributes"]["QueueArn"])
        return self._arn

    def emit(self, msg: dict[str, Any]) -> None:
        self.out(msg)
        if msg["type"] == "committed":
            self.delete(self.inflight.pop(msg["groupIds"]))
        elif msg["type"] == "dropped" and msg["reason"] == "invalid":
            gid = msg["groupId"]
            self.inflight.pop([gid])
            if gid in self.handle_of:
                reason = msg.get("message", "invalid")
                self.dead_letter(
                    self.body_of[gid], self.handle_of[gid], reason, self.receives_of.get(gid, "1")
                )
                self.count_handled(1)

    def delete(self, handles: list[str]) -> None:
        for i in range(0, len(handles), 10):
            entries = [{"Id": str(j), "ReceiptHandle": h} for j, h in enumerate(handles[i : i + 10])]
            resp = self.client.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
            for f in resp.get("Failed", []):
                log.warning("delete failed (the group is settled; a redelivery will be a duplicate): %s", f)
            self.count_handled(len(entries) - len(resp.get("Failed", [])))

    def dead_letter(self, body: str, handle: str, reason: str, receives: str) -> None:
        if not self.dlq_url:
            log.error("no dead-letter queue configured; the queue's redrive policy will move it: %s", reason)
            return
        attrs = {ATTR_REASON: reason[:2000], ATTR_SOURCE: self.queue_arn, ATTR_RECEIVES: receives}
        self.client.send_message(
            QueueUrl=self.dlq_url,
            MessageBody=body,
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attrs.items()},
        )
        self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handle)

    def status_of(self, run_id: str) -> str | None:
        """Another run's status from its run.json ("" when it has none yet), None when the run does not exist;
        believed for RUN_STATUS_TTL_S, so a busy queue costs one read per run and half-minute."""
        now = time.monotonic()
        cached = self._run_status.get(run_id)
        if cached and now - cached[0] < RUN_STATUS_TTL_S:
            return cached[1]
        status: str | None
        try:
            doc = json.loads(self.store.get_bytes(keys.run_json(run_id))) if run_id else None
            status = str(doc.get("status") or "") if isinstance(doc, dict) else None
        except BlobNotFound:
            status = None
        except ValueError:
            status = ""  # being rewritten: treat the run as live
        self._run_status[run_id] = (now, status)
        return status

    def pass_on(self, body: str, handle: str, run_id: str, receives: str) -> None:
        """Another run's message: forwarded to its learner as a fresh message, never handed back (see above)."""
        status = self.status_of(run_id)
        if status is None:
            self.dead_letter(
                body, handle, f"scored-group message of run {run_id!r}, which does not exist", receives
            )
        elif status in ("completed", "failed"):
            log.info("deleting a scored-group message of run %s, which has %s", run_id, status)
            self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handle)
        else:
            # Sent before the delete: a crash in between leaves a duplicate, which that run's learner drops.
            self.client.send_message(QueueUrl=self.queue_url, MessageBody=body, DelaySeconds=FORWARD_DELAY_S)
            self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handle)
            self.forwarded += 1
            log.info("forwarded a scored-group message of run %s (%d so far)", run_id, self.forwarded)

    def receive(self, wait_s: int, visibility: int) -> list[dict[str, Any]]:
        """Poll once; returns the stdio-style lines of the messages for this run."""
        resp = self.client.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=wait_s,
            VisibilityTimeout=visibility,
        )
        lines = []
        for m in resp.get("Messages", []):
            body, handle = m["Body"], m["ReceiptHandle"]
            receives = (m.get("Attributes") or {}).get("ApproximateReceiveCount", "1")
            try:
                msg = json.loads(body)
                if not isinstance(msg, dict):
                    raise ValueError("message body is not a JSON object")
            except ValueError as e:
                self.dead_letter(body, handle, f"unreadable scored-group message: {e}", receives)
                continue
            if msg.get("runId") != self.run_id:
                self.pass_on(body, handle, str(msg.get("runId") or ""), receives)
                continue
            gid = str(msg.get("groupId") or "?")
            if self.prefetch is not None and isinstance(msg.get("manifestKey"), str):
                self.prefetch.prefetch(msg["manifestKey"])
            self.inflight.add(gid, handle)
            self.handle_of[gid], self.body_of[gid], self.receives_of[gid] = handle, body, receives
            lines.append({**msg, "type": "group"})
        return lines


def main(argv: list[str]) -> int:
    p = base_parser("sqs", (__doc__ or "").partition("\n")[0])
    bucket = os.environ.get("TOOLRL_BUCKET")
    p.add_argument(
        "--root", default=f"s3://{bucket}" if bucket else None, help="s3://bucket (env TOOLRL_BUCKET)"
    )
    p.add_argument("--queue-url", default=os.environ.get("TOOLRL_QUEUE_URL_SCORED_GROUPS"))
    p.add_argument("--dlq-url", default=os.environ.get("TOOLRL_DLQ_URL_SCORED_GROUPS"))
    p.add_argument("--wait", type=int, default=20, help="long-poll seconds")
    p.add_argument(
        "--visibility", type=int, default=900, help="visibility lease (s), renewed every third of it"
    )
    p.add_argument(
        "--idle-exit", type=float, help="finish after this many seconds without a message for this run"
    )
    args = parse_args(p, argv, required=("run_id", "root", "queue_url"))
    out = protocol_stdout()
    return lead_or_follow(args, lambda world: _lead(args, world, out))


def _lead(args, world: World, out: LineWriter) -> int:
    heartbeat: Heartbeat | None = None
    driver: SqsDriver | None = None

    def open_session() -> LearnerSession:
        nonlocal heartbeat, driver
        from ..sharded.session import open_session
        from ..storage import open_store
        from ..storage.s3 import make_client

        driver = SqsDriver(
            make_client("sqs"), args.queue_url, args.dlq_url, args.run_id, out, open_store(args.root)
        )
        heartbeat = Heartbeat(
            make_client("sqs"), args.queue_url, driver.inflight, args.visibility, args.visibility / 3
        )
        heartbeat.start()
        driver.prefetch = Prefetching(open_store(args.root))
        return open_session(
            driver.prefetch,
            args.run_id,
            world,
            emit=driver.emit,
            workdir=args.workdir,
            max_steps=args.max_steps,
        )

    def feed(session: LearnerSession, guard: SignalGuard) -> None:
        assert driver is not None  # open_session made it
        last_message = time.monotonic()
        while not session.done:
            with session.timer.phase("wait"):
                lines = driver.receive(args.wait, args.visibility)
            if lines:
                last_message = time.monotonic()
            for line in lines:
                with guard.busy():
                    session.offer(line)
                if session.done:
                    break
            with guard.busy():
                session.tick()
            if (
                not session.done
                and args.idle_exit is not None
                and time.monotonic() - last_message > args.idle_exit
            ):
                log.info("no message for %.0f s: finishing", args.idle_exit)
                with guard.busy():
                    session.finish()

    try:
        return drive(out, open_session, feed)
    finally:
        if heartbeat is not None:
            heartbeat.stopped.set()

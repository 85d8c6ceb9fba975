"""Groups the pipeline gave up on: the stages record each dead-lettered message of a group under the run's
`dead-letters/` prefix (shared/pipeline/dead-letters.ts). The learner lists that prefix every few seconds and
counts each new train group as dropped, so it never waits for a group that cannot arrive; an invalid scored
group it refuses itself is recorded there too, so every dead letter of a run is in one place."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from ..contracts import ContractError, timestamp, validate
from ..storage import BlobNotFound, BlobStore, keys

log = logging.getLogger(__name__)
POLL_S = 5.0


class DeadLetterWatch:
    def __init__(self, store: BlobStore, run_id: str, period_s: float = POLL_S) -> None:
        self.store, self.run_id, self.period_s = store, run_id, period_s
        self._polled_at = float("-inf")

    def due(self) -> bool:
        return time.monotonic() - self._polled_at >= self.period_s

    def new_train_groups(self, known: set[str]) -> list[tuple[str, str]]:
        """(group id, first reason) of each train group with a dead letter that is not in `known`."""
        self._polled_at = time.monotonic()
        by_group: dict[str, list[str]] = {}
        for key in self.store.list(keys.dead_letters(self.run_id)):
            gid = keys.dead_letter_group(self.run_id, key)
            if gid and gid not in known:
                by_group.setdefault(gid, []).append(key)
        out = []
        for gid, record_keys in sorted(by_group.items()):
            record = self._read(record_keys[0])
            if record is not None and record["split"] == "train":
                out.append((gid, f"{record['stage']}: {record['reason']}"))
        return out

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            record = json.loads(self.store.get_bytes(key))
            validate("dead-letter-record", record)
            return record
        except (BlobNotFound, ValueError, ContractError) as e:
            # A record removed between the listing and the read, or a stray object.
            log.warning("skipping dead-letter record %s: %s", key, e)
            return None

    def record_refused(self, group_id: str, reason: str) -> None:
        """The learner's own dead letter (an invalid scored group), in the same place as the stages' records."""
        message_id = uuid.uuid4().hex
        record = {
            "schemaVersion": 1,
            "runId": self.run_id,
            "groupId": group_id,
            "split": "train",
            "stage": "learner",
            "sampleIndex": None,
            "messageId": message_id,
            "reason": reason[:4000],
            "receiveCount": 1,
            "deadLetteredAt": timestamp(),
        }
        validate("dead-letter-record", record)
        self.store.put_if_absent(
            keys.dead_letter(self.run_id, group_id, "learner", message_id),
            (json.dumps(record) + "\n").encode(),
        )

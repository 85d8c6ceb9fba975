"""The SQS driver's manifest prefetch (drivers/sqs.py `Prefetching`): a prefetched key answers with the object's
bytes, read once; a missing one fails the `get_bytes` that takes it with BlobNotFound, as an unprefetched read
does; every other call reaches the store."""

import pytest

from toolrl_learner.drivers.sqs import Prefetching
from toolrl_learner.storage import BlobNotFound, FolderBlobStore


class CountingStore(FolderBlobStore):
    def __init__(self, root) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def get_bytes(self, key: str) -> bytes:
        self.reads.append(key)
        return super().get_bytes(key)


def test_a_prefetched_manifest_is_read_once_and_a_missing_one_fails_its_read(tmp_path):
    store = CountingStore(tmp_path)
    store.put_bytes("runs/r/groups/g1.json", b'{"groupId": "g1"}')
    pre = Prefetching(store)
    pre.prefetch("runs/r/groups/g1.json")
    pre.prefetch("runs/r/groups/g1.json")  # a redelivery's second prefetch of the same key: one read
    pre.prefetch("runs/r/groups/missing.json")
    assert pre.get_bytes("runs/r/groups/g1.json") == b'{"groupId": "g1"}'
    with pytest.raises(BlobNotFound):
        pre.get_bytes("runs/r/groups/missing.json")
    assert store.reads.count("runs/r/groups/g1.json") == 1
    # Taken once: a later read of the key goes to the store again (the object may have changed).
    store.put_bytes("runs/r/groups/g1.json", b'{"groupId": "g1", "v": 2}')
    assert pre.get_bytes("runs/r/groups/g1.json") == b'{"groupId": "g1", "v": 2}'
    pre.put_bytes("runs/r/state.json", b"{}")
    assert store.get_bytes("runs/r/state.json") == b"{}"
    assert pre.describe == store.describe

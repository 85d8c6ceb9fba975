"""The blob-store interface the learner codes against (the Python side of shared/ports/blob-store.ts)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class BlobNotFound(KeyError):
    """No object has this key."""


def check_key(key: str) -> str:
    """Reject keys that could escape a folder root or that S3 would treat differently from a file system."""
    if not key or len(key) > 1024 or key.startswith("/"):
        raise ValueError(f"invalid blob key {key!r}: must be a non-empty relative path")
    parts = key.split("/")
    for i, p in enumerate(parts):
        if p in (".", "..") or (p == "" and i != len(parts) - 1):
            raise ValueError(f"invalid blob key {key!r}: segment {p!r}")
    return key


class BlobStore(Protocol):
    describe: str

    def get_bytes(self, key: str) -> bytes:
        """The object's bytes; raises BlobNotFound."""
        ...

    def put_bytes(self, key: str, data: bytes) -> None:
        """Write atomically: readers see the old object or the whole new one."""
        ...

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Write only if no object has the key; False (and nothing written) otherwise."""
        ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str) -> list[str]:
        """Keys starting with `prefix`, sorted."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object (no error if missing)."""
        ...

    def put_file(self, key: str, path: Path) -> None:
        """Upload a local file (streamed; large weights)."""
        ...

    def get_file(self, key: str, path: Path) -> None:
        """Download to a local file; raises BlobNotFound."""
        ...

    def local_path(self, key: str) -> Path | None:
        """Where the object lives on this machine for a folder store (write/read in place); None for S3."""
        ...

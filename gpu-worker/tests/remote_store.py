"""A folder that the learner must treat as remote: `local_path` is None, so the S3 code paths (staging
folders, uploads, downloads) run against files on disk without LocalStack. `fail_put_file` makes
uploads whose key matches raise, to kill a publish or a checkpoint halfway."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from toolrl_learner.storage import FolderBlobStore


class UploadFailed(OSError):
    """The injected failure of one upload."""


class RemoteFolderStore:
    def __init__(self, root: Path, fail_put_file: Callable[[str], bool] | None = None) -> None:
        self.folder = FolderBlobStore(root)
        self.describe = f"remote-like {self.folder.describe}"
        self.fail_put_file = fail_put_file
        self.uploads: list[str] = []  # keys put with put_file, in order

    def local_path(self, key: str) -> None:
        return None

    def put_file(self, key: str, path: Path) -> None:
        if self.fail_put_file is not None and self.fail_put_file(key):
            raise UploadFailed(f"injected failure uploading {key}")
        self.uploads.append(key)
        self.folder.put_file(key, path)

    def __getattr__(self, name: str):
        return getattr(
            self.folder, name
        )  # get_bytes, put_bytes, put_if_absent, exists, list, delete, get_file

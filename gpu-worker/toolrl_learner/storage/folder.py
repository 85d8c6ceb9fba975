"""The embedded blob store: a local folder where a key is a relative path. Same conventions as the
TypeScript FolderBlobStore: writes go to a `.tmp-<pid>-<n>` file renamed into place (listings skip
those), put-if-absent is link(2), which fails atomically when the target exists."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from .base import BlobNotFound, check_key

TMP_PREFIX = ".tmp-"
_counter = itertools.count()


class FolderBlobStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.describe = f"file://{self.root}"

    def local_path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def _tmp_for(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.parent / f"{TMP_PREFIX}{os.getpid()}-py{next(_counter)}"

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.local_path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise BlobNotFound(key) from None

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self.local_path(key)
        tmp = self._tmp_for(path)
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        path = self.local_path(key)
        tmp = self._tmp_for(path)
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def exists(self, key: str) -> bool:
        return self.local_path(key).is_file()

    def list(self, prefix: str) -> list[str]:
        dir_key = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        base = self.local_path(dir_key) if dir_key else self.root
        if not base.is_dir():
            return []
        out = []
        for dirpath, _, files in os.walk(base):
            rel = Path(dirpath).relative_to(self.root).as_posix()
            for f in files:
                if f.startswith(TMP_PREFIX):
                    continue
                key = f if rel == "." else f"{rel}/{f}"
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)

    def delete(self, key: str) -> None:
        self.local_path(key).unlink(missing_ok=True)

    def put_file(self, key: str, path: Path) -> None:
        dest = self.local_path(key)
        if Path(path).resolve() == dest:
            return
        tmp = self._tmp_for(dest)
        shutil.copyfile(path, tmp)
        os.replace(tmp, dest)

    def get_file(self, key: str, path: Path) -> None:
        src = self.local_path(key)
        if not src.is_file():
            raise BlobNotFound(key)
        if Path(path).resolve() != src:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, path)

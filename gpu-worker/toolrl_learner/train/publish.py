"""Publishing policy versions: `policy/v<N>/` through the bundle export (the full graph once, then the
weights file only), then `LATEST.json` moved to it - only after every file of the version is in place.

In a bucket a version uploads only the files that differ from the previous version's (the weights); its manifest
names, for each unchanged file, the version whose folder holds it (`files[name].version`), and readers fetch it from
there. A folder store's versions hold every file (hard links)."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..contracts import validate
from ..storage import BlobNotFound, BlobStore, keys

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"
DATA_FILE = "model.onnx.data"


class Publisher:
    def __init__(
        self,
        store: BlobStore,
        run_id: str,
        workdir: Path,
        tokenizer_dir: Path,
        quantization: str = "none",
        block_size: int = 32,
    ):
        self.store = store
        self.run_id = run_id
        self.workdir = Path(workdir)
        self.tokenizer_dir = Path(tokenizer_dir)
        self.quantization = quantization
        self.block_size = block_size
        self._graph_dir: Path | None = None  # a local bundle whose graph the next version reuses

    def latest(self) -> dict[str, Any] | None:
        """The current LATEST.json pointer, or None before v0."""
        try:
            raw = self.store.get_bytes(keys.policy_latest(self.run_id))
        except BlobNotFound:
            return None
        return validate("policy-pointer", json.loads(raw))

    def _local_dir(self, version: int) -> tuple[Path, bool]:
        """Where to write version's files: in place for a folder store, else a staging folder to upload."""
        prefix = keys.policy_version(self.run_id, version)
        local = self.store.local_path(prefix + MANIFEST)
        if local is not None:
            return Path(local).parent, False
        return self.workdir / "bundles" / f"v{version}", True

    def _graph_source(self) -> Path | None:
        """The previous version's bundle on this machine (downloaded without its weights if needed)."""
        if self._graph_dir is not None and (self._graph_dir / MANIFEST).is_file():
            return self._graph_dir
        latest = self.latest()
        if latest is None:
            return None
        local = self.store.local_path(latest["prefix"] + MANIFEST)
        if local is not None:
            return Path(local).parent
        dest = self.workdir / "bundles" / f"v{latest['version']}"
        manifest = json.loads(self.store.get_bytes(latest["prefix"] + MANIFEST))
        for name, entry in manifest["files"].items():
            if name != DATA_FILE:
                self.store.get_file(self._file_key(manifest, name, entry), dest / name)
        (dest / MANIFEST).write_bytes(json.dumps(manifest).encode())
        return dest

    def _file_key(self, manifest: dict[str, Any], name: str, entry: dict[str, Any]) -> str:
        """Where a published version's file is stored: its own folder, or the folder of the version it names."""
        return keys.policy_version(self.run_id, entry.get("version", manifest["version"])) + name

    @staticmethod
    def _stored(graph_from: Path | None) -> dict[str, tuple[str, int]]:
        """The previous version's files by name: (sha256, the version whose folder holds it)."""
        if graph_from is None:
            return {}
        prev = json.loads((graph_from / MANIFEST).read_text())
        return {n: (e["sha256"], e.get("version", prev["version"])) for n, e in prev["files"].items()}

    def same_weights(self, model, version: int) -> bool:
        """Whether the published policy/v<version>/ holds exactly `model`'s weights (a deterministic run replaying
        versions a killed learner had published: lineage.py); False when that version has no manifest."""
        from ..export.bundle import weights_digest

        try:
            manifest = json.loads(self.store.get_bytes(keys.policy_version(self.run_id, version) + MANIFEST))
        except BlobNotFound:
            return False
        published = (manifest.get("files") or {}).get(DATA_FILE, {}).get("sha256")
        block_size = (manifest.get("export") or {}).get("blockSize") or self.block_size
        digest = weights_digest(model, manifest.get("quantization", "none"), block_size, self.workdir)
        return published == digest

    def publish(self, model, version: int) -> dict[str, Any]:
        """Write policy/v<version>/ and move LATEST to it; returns the pointer {version, prefix, sha256}."""
        from ..export.bundle import export_bundle, publish_weights

        prefix = keys.policy_version(self.run_id, version)
        out, remote = self._local_dir(version)
        graph_from = self._graph_source()
        if graph_from is None:
            export_bundle(
                model,
                out,
                version,
                self.quantization,
                tokenizer_dir=self.tokenizer_dir,
                block_size=self.block_size,
            )
        else:
            publish_weights(model, out, version, graph_from=graph_from)
        manifest_bytes = (out / MANIFEST).read_bytes()
        if remote:
            manifest = json.loads(manifest_bytes)
            stored = self._stored(graph_from)
            names = []
            for name, entry in manifest["files"].items():
                prev = stored.get(name)
                if prev is not None and prev[0] == entry["sha256"]:
                    entry["version"] = prev[1]  # unchanged: read from where it already is
                else:
                    names.append(name)
            validate("bundle-manifest", manifest)
            manifest_bytes = (json.dumps(manifest, indent=2) + "\n").encode()
            (out / MANIFEST).write_bytes(
                manifest_bytes
            )  # the next version's graph source knows where files are
            # All at once (a publish is on the critical path of every deterministic step); the manifest goes last: a
            # version without one is incomplete.
            with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
                for f in [pool.submit(self.store.put_file, prefix + name, out / name) for name in names]:
                    f.result()
            self.store.put_bytes(prefix + MANIFEST, manifest_bytes)
        pointer = {"version": version, "prefix": prefix, "sha256": hashlib.sha256(manifest_bytes).hexdigest()}
        validate("policy-pointer", pointer)
        self.store.put_bytes(keys.policy_latest(self.run_id), json.dumps(pointer).encode())
        if remote and self._graph_dir is not None and self._graph_dir != out:
            shutil.rmtree(self._graph_dir, ignore_errors=True)
        self._graph_dir = out
        log.info("published %s", prefix)
        return pointer

"""Deleting published policy versions once nothing can need them (`trainer.keep_policy_versions: needed`).

A version is a rollout bundle under `policy/v<N>/` (publish.py): 269 MB for SmolLM2-135M at int8, one per step. With
`needed` the learner keeps, after each step and checkpoint:

- v0, every multiple of `eval_every` (the versions validation runs on; the feeder may schedule one after later
  versions are out) and the version of every checkpoint written (`TrainerState.checkpoint_versions`; the final
  version is the last checkpoint's);
- the newest `max_staleness + 2`: rollouts in flight sample by a version at most `max_staleness` behind LATEST
  (a deterministic run pins them so), and one more covers a process whose read of LATEST.json is a moment old;
- any version whose folder holds a file that a kept version's manifest names (`files[name].version`: in a bucket,
  v0's folder holds the graph and tokenizer of every later version).

What lineage (versions.py) reads of older versions: a deterministic resume replays the versions published after
its checkpoint and compares its weights with each one's manifest (`Publisher.same_weights`). So in a deterministic
run a version past the newest complete checkpoint loses every file but `manifest.json` ("retired"), and the
manifest goes once a checkpoint at or past it is complete; an asynchronous resume republishes and reads none.
Versions above LATEST (a publish a kill cut short, which the resume writes again) are left alone.

The manifest is deleted first, so a version being deleted reads as incomplete, never as a bundle with files
missing. A delete that fails is logged and tried again at the next sweep: cleaning up never stops a run.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..storage import BlobNotFound, BlobStore, keys
from .publish import MANIFEST

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """What a sweep does: versions kept whole, kept as their manifest only, deleted."""

    keep: frozenset[int]
    retire: frozenset[int]
    delete: frozenset[int]


def plan(
    present: Iterable[int],
    *,
    latest: int,
    checkpoint: int,
    pinned: Iterable[int],
    eval_every: int,
    max_staleness: int,
    deterministic: bool,
    refs: dict[int, set[int]],
) -> Plan:
    """The rule of the module docstring. `present`: versions with files in the store; `latest`: the newest
    published; `checkpoint`: the version of the newest complete checkpoint (where a resume starts); `pinned`: the
    versions of every checkpoint written; `refs`: for each version, the versions its manifest takes files from."""
    present = set(present)
    window = latest - (max_staleness + 1)
    # The newest checkpoint's version too (for a checkpoint written before checkpoint_versions was kept).
    pinned = {*pinned, checkpoint}

    def wanted(v: int) -> bool:
        return v == 0 or v >= window or v in pinned or (eval_every > 0 and v % eval_every == 0)

    keep = {v for v in present if v > latest or wanted(v)}
    todo = list(keep)
    while todo:  # the folders kept versions read files from, and theirs
        for r in refs.get(todo.pop(), set()):
            if r not in keep:
                keep.add(r)
                todo.append(r)
    rest = present - keep
    retire = {v for v in rest if deterministic and v > checkpoint}
    return Plan(frozenset(keep), frozenset(retire), frozenset(rest - retire))


@dataclass
class Retention:
    store: BlobStore
    run_id: str
    eval_every: int
    max_staleness: int
    deterministic: bool
    present: set[int] | None = None  # versions with files in the store (listed at the first sweep)
    retired: set[int] = field(default_factory=set)  # of those, the ones left with their manifest only
    # Manifests read (versions are never rewritten): (files in the version's own folder, versions it reads from)
    _refs: dict[int, tuple[set[str], set[int]]] = field(default_factory=dict)

    def published(self, version: int) -> None:
        if self.present is not None:
            self.present.add(version)

    def sweep(self, *, latest: int, checkpoint: int, pinned: Iterable[int]) -> Plan | None:
        """Delete (or retire) what the rule no longer keeps; None if the store could not be read or written."""
        try:
            if self.present is None:
                self.present, self.retired = self._listed()
            refs = {v: self._manifest(v)[1] for v in self.present}
            todo = plan(
                self.present,
                latest=latest,
                checkpoint=checkpoint,
                pinned=pinned,
                eval_every=self.eval_every,
                max_staleness=self.max_staleness,
                deterministic=self.deterministic,
                refs=refs,
            )
            for v in sorted(todo.retire - self.retired):
                self._remove(v, keep_manifest=True)
                self.retired.add(v)
            for v in sorted(todo.delete):
                self._remove(v, keep_manifest=False)
                self.present.discard(v)
                self.retired.discard(v)
            return todo
        except Exception as e:  # noqa: BLE001 - cleaning up never stops a run; the next sweep tries again
            log.warning(
                "deleting old policy versions of run %s failed (tried again later): %s", self.run_id, e
            )
            self.present = None
            return None

    def _listed(self) -> tuple[set[int], set[int]]:
        """The versions with files in the store, and of those the retired ones: a manifest whose files stored in
        the version's own folder are gone."""
        files: dict[int, set[str]] = {}
        for key in self.store.list(keys.policies(self.run_id)):
            v = keys.parse_policy_version(self.run_id, key)
            if v is not None:
                files.setdefault(v, set()).add(key.rsplit("/", 1)[-1])
        retired = set()
        for v, names in files.items():
            own = self._manifest(v)[0] if MANIFEST in names else set()
            if own and not own <= names:
                retired.add(v)
        return set(files), retired

    def _manifest(self, version: int) -> tuple[set[str], set[int]]:
        """The files a version's manifest says its own folder holds, and the other versions whose folders hold the
        rest (both empty while it has no manifest: an incomplete version names nothing)."""
        if version not in self._refs:
            prefix = keys.policy_version(self.run_id, version)
            try:
                manifest = json.loads(self.store.get_bytes(prefix + MANIFEST))
            except BlobNotFound:
                return set(), set()
            own = manifest.get("version", version)
            entries = (manifest.get("files") or {}).items()
            self._refs[version] = (
                {n for n, e in entries if e.get("version", own) == own},
                {int(e["version"]) for _, e in entries if e.get("version", own) != own},
            )
        return self._refs[version]

    def _remove(self, version: int, *, keep_manifest: bool) -> None:
        prefix = keys.policy_version(self.run_id, version)
        names = self.store.list(prefix)
        manifest = prefix + MANIFEST
        if not keep_manifest and manifest in names:
            self.store.delete(manifest)  # first: a version being deleted reads as incomplete
        for key in names:
            if key != manifest:
                self.store.delete(key)
        if not keep_manifest:
            self._refs.pop(version, None)
            local = self.store.local_path(manifest)
            if local is not None:  # a folder store keeps empty directories after its files are deleted
                shutil.rmtree(Path(local).parent, ignore_errors=True)
        log.info(
            "policy v%d %s", version, "retired (manifest kept for a resume)" if keep_manifest else "deleted"
        )

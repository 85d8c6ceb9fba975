"""Publishing policy versions, and what a crash leaves of them: which versions the learner's weights descend from.

A learner killed after its last checkpoint has published versions that the resumed learner does not have the
weights of ("orphans": the checkpoint is at v<c>, LATEST at v<c+k>). Versions are never rewritten, so:

- **Deterministic runs replay them.** Retraining the same batches from the checkpoint gives the same weights, so
  the resumed learner does not publish v<c+1>..v<c+k> again: it checks that its weights are those of each one as it
  reaches it (`Publisher.same_weights`) and moves on, and the run goes on exactly as if it had never stopped.
  Should they differ (another machine, another torch), the replay ends there and the run goes on as below.
- **Asynchronous runs republish.** The checkpoint's weights go out under the next free number, v<R>, which takes
  the orphans' place in the learner's lineage. Staleness is counted along the lineage (`Lineage.staleness`), so a
  group sampled by v<c> is as fresh at v<R> as it was at v<c>, and one sampled by an orphan counts as that many
  versions past the checkpoint (never stale for the weights that replace it): the resume itself drops no group.

`Lineage` holds the anchors: version R sits at lineage index i (an index is the number of publishes the weights
are past v0 along the learner's own history); v >= R, up to the next anchor, at i + (v - R). Orphans keep the
index the dead learner's history gave them. A run that never crashed has no anchors and index(v) == v.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .publish import Publisher

log = logging.getLogger(__name__)


@dataclass
class Lineage:
    anchors: list[tuple[int, int]] = field(default_factory=list)  # (version, index), by version

    @classmethod
    def from_json(cls, raw: list[list[int]] | None) -> Lineage:
        return cls(sorted((int(v), int(i)) for v, i in raw or []))

    def to_json(self) -> list[list[int]]:
        return [[v, i] for v, i in self.anchors]

    def index(self, version: int) -> int:
        base_v, base_i = 0, 0
        for v, i in self.anchors:
            if v > version:
                break
            base_v, base_i = v, i
        return base_i + (version - base_v)

    def anchor(self, version: int, index: int) -> None:
        """`version` holds the weights at lineage `index` (a republish after a crash, or a replay that diverged)."""
        self.anchors = sorted([a for a in self.anchors if a[0] != version] + [(version, index)])

    def staleness(self, sampled: int, current: int) -> int:
        """How many publishes of the learner's lineage lie between version `sampled` and `current` (0 if none)."""
        return max(0, self.index(current) - self.index(sampled))


class Versions:
    """The session's publishing: the Publisher, with replay (deterministic runs) and republish (asynchronous ones)
    after a crash. `model` is called once per decision to get the weights to publish (the sharded learner gathers
    them on that call)."""

    def __init__(self, publisher: Publisher, lineage: Lineage) -> None:
        self.publisher = publisher
        self.lineage = lineage
        self.replay_to = -1  # deterministic resume: versions up to this one are out already, to be replayed

    def resume(
        self, model: Callable[[], Any], ours: int, *, deterministic: bool, weights_changed: bool
    ) -> tuple[int, dict[str, Any] | None]:
        """At start, the learner's weights are those of version `ours` (v0 for a fresh run): publish them if they
        are not out, replay or republish them if LATEST is past them. Returns (the version the weights now are, the
        new pointer or None when nothing was published)."""
        latest = self.publisher.latest()
        if latest is None or latest["version"] < ours:
            return ours, self.publisher.publish(model(), ours)  # v0 of a fresh run
        if deterministic:
            # Versions up to LATEST were published by a learner killed after them (or these are they): retraining
            # from here gives them again, each checked as it is reached.
            self.replay_to = latest["version"]
            return self.publish(model, ours)
        if latest["version"] != ours or weights_changed:
            # LATEST holds weights this learner no longer has (steps lost in a crash, or pre-SFT weights): these
            # weights go out as the next version, so rollouts follow the learner; versions are never rewritten.
            return self._republish(model(), ours)
        return ours, None

    def publish(self, model: Callable[[], Any], version: int) -> tuple[int, dict[str, Any] | None]:
        """Publish the weights as `version`; in a replay, check that they are the published ones instead. Returns
        (the version they now are, the new pointer or None when replayed)."""
        if version > self.replay_to:
            return version, self.publisher.publish(model(), version)
        weights = model()
        if self.publisher.same_weights(weights, version):
            log.info(
                "v%d: the weights published before the restart, trained again; not published again", version
            )
            return version, None
        log.warning(
            "v%d was published before the restart with other weights than the resumed learner trained (another "
            "machine or library version?): the run goes on under new version numbers and is no longer deterministic",
            version,
        )
        self.replay_to = -1
        return self._republish(weights, version)

    def _republish(self, weights: Any, version: int) -> tuple[int, dict[str, Any]]:
        """The weights at lineage position `version` go out under the next free number, which takes the place of
        the versions a killed learner published after them."""
        latest = self.publisher.latest()
        new = max(version, latest["version"] if latest else -1) + 1
        self.lineage.anchor(new, self.lineage.index(version))
        return new, self.publisher.publish(weights, new)

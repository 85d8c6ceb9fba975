"""The learner's exactly-once bookkeeping of group ids. A group is "settled" once a committed checkpoint
records it (trained or dropped): only then may its queue message be deleted, so a crash redelivers exactly
the groups whose effect was lost. Until then it is "in flight" (buffered, trained or dropped since the last
checkpoint), and the ids to announce at the next commit wait in `pending`."""

from __future__ import annotations

from .checkpoint import TrainerState


class GroupLedger:
    def __init__(self, state: TrainerState) -> None:
        self.state = state  # the trained and dropped ids go on record here, for the checkpoint
        self.settled = set(state.consumed_group_ids) | set(state.dropped_group_ids)
        self.in_flight: set[str] = set()
        self.pending: list[str] = []  # ids settled by the next commit
        self.duplicates = 0  # redeliveries seen, for the step rows
        self.dropped_since_step = 0

    def known(self, gid: str) -> bool:
        return gid in self.settled or gid in self.in_flight

    def duplicate(self, gid: str) -> None:
        """A redelivery: a settled group's message is deleted at the next commit; an in-flight one's waits for it."""
        self.duplicates += 1
        if gid in self.settled:
            self.pending.append(gid)

    def dropped(self, gid: str) -> None:
        st = self.state
        st.groups_dropped += 1
        st.dropped_group_ids.append(gid)
        self.dropped_since_step += 1
        self.in_flight.add(gid)

    def trained(self, gids: list[str]) -> None:
        st = self.state
        st.groups_consumed += len(gids)
        st.consumed_group_ids.extend(gids)
        self.pending.extend(gids)

    def revive(self, gid: str) -> None:
        """A group counted as dropped when a stage dead-lettered it has arrived after all (a DLQ redrive)."""
        st = self.state
        st.dead_lettered_group_ids.remove(gid)
        if gid in st.dropped_group_ids:
            st.dropped_group_ids.remove(gid)
            st.groups_dropped -= 1
        self.settled.discard(gid)
        self.in_flight.discard(gid)
        self.pending = [g for g in self.pending if g != gid]

    def commit(self) -> list[str]:
        """A checkpoint is committed: the pending ids are settled; returns them."""
        ids, self.pending = self.pending, []
        self.settled.update(ids)
        self.in_flight.difference_update(ids)
        return ids

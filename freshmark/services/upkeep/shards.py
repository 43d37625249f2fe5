"""Bringing repositories home after the server list changed: ``freshmark shards plan|move``.

``plan`` lists every collection that is not on its repository's home server under the current
``FRESHMARK_CHROMA_URLS`` (``core/placement.py``): after a server is added, exactly the
repositories rendezvous hashing now gives it. ``move`` relocates them one collection at a time
(``adapters/store/relocate.py``): copied in bounded pages under a staging name, counted,
switched, and only then deleted from the old server. The store reads a collection wherever it
is, home first, so search keeps answering from the old copy until the switch; a move killed at
any point finishes when run again.

A servers' list that drops a server leaves its repositories unreachable to the tool: keep the
old server listed until ``plan`` is empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.relocate import STAGING_PREFIX, Relocated, relocate
from freshmark.adapters.store.shard import Shard
from freshmark.core.placement import Move, moves

# Records per read and write while moving: a page of 384-d float vectors and chunk texts stays
# in the low megabytes, well under Chroma's write limit (``calls.MAX_BATCH``).
DEFAULT_BATCH_RECORDS = 500


@dataclass(frozen=True)
class RepoMove:
    """One repository whose collections are not (all) on its home server."""

    repo: str
    repo_key: str
    target: str
    collections: tuple[tuple[str, str], ...]  # (collection, source location)

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "repo_key": self.repo_key, "to": self.target,
                "collections": [{"name": name, "from": source}
                                for name, source in self.collections]}


def plan(store: Store) -> list[RepoMove]:
    """The repositories a ``move`` would relocate, by repository."""
    placed = store.placed_manifests()
    names = {m.repo_key: m.repo for _, m in placed}
    by_identity = {shard.identity: shard for shard in store.shards}
    pending = moves(((m.repo_key, m.collection, shard.identity) for shard, m in placed),
                    [shard.identity for shard in store.shards])
    grouped: dict[str, list[Move]] = {}
    for move in pending:
        grouped.setdefault(move.repo_key, []).append(move)
    return [RepoMove(names[key], key, by_identity[items[0].target].location,
                     tuple((m.collection, by_identity[m.source].location) for m in items))
            for key, items in sorted(grouped.items())]


@dataclass(frozen=True)
class MoveReport:
    relocated: tuple[Relocated, ...]
    staging_dropped: int

    @property
    def complete(self) -> bool:
        return all(r.outcome != "changed" for r in self.relocated)

    def to_dict(self) -> dict[str, Any]:
        return {"complete": self.complete, "staging_dropped": self.staging_dropped,
                "collections": [{"name": r.name, "records": r.records, "outcome": r.outcome}
                                for r in self.relocated]}


def move(store: Store, *, batch_records: int = DEFAULT_BATCH_RECORDS,
         on_done: Callable[[Relocated], None] | None = None) -> MoveReport:
    """Relocate every collection ``plan`` names, then drop staging copies left by a run cut
    short whose collection has since gone. ``on_done`` hears of each collection as it ends."""
    if batch_records < 1:
        raise ValueError("batch_records must be >= 1")
    by_location = {shard.location: shard for shard in store.shards}
    done: list[Relocated] = []
    for repo_move in plan(store):
        target = by_location[repo_move.target]
        for name, source in repo_move.collections:
            result = relocate(by_location[source], target, name, batch_records)
            done.append(result)
            if on_done is not None:
                on_done(result)
    return MoveReport(tuple(done), sum(_drop_staging(shard) for shard in store.shards))


def _drop_staging(shard: Shard) -> int:
    """Staging copies left on ``shard`` (none is in use once every move has ended)."""
    stale = [name for name in shard.names() if name.startswith(STAGING_PREFIX)]
    for name in stale:
        shard.delete(name)
    return len(stale)

"""Copy one branch collection from one Chroma to another, switching over only when complete.

The copy is written under a staging name (``STAGING_PREFIX`` + name) that no reader opens:
the store lists and opens only ``fm-`` names. Once the staging copy holds as many records as
the source and the source did not change meanwhile (same count, same manifest), it is renamed
to the real name on the target, which is the switch: from then on the target, the home server,
is where every reader and writer finds the collection. Only then is the source deleted.

Every step can be cut short and re-run: a staging copy left behind is dropped and copied
again; a collection already switched (on the target under its real name) only has its source
deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from freshmark.adapters.store.calls import guard
from freshmark.adapters.store.client import ChromaCollection
from freshmark.adapters.store.shard import Shard

STAGING_PREFIX = "fmmove-"
INCLUDE = ["documents", "metadatas", "embeddings"]


def staging_name(name: str) -> str:
    return f"{STAGING_PREFIX}{name}"


@dataclass(frozen=True)
class Relocated:
    """What moving one collection did: ``records`` copied (0 when it had been switched
    already) and ``outcome``: ``moved``, ``finished`` (an earlier run had switched it; the
    source was deleted now), ``gone`` (the source no longer exists) or ``changed`` (written
    while being copied; left on the source, run again)."""

    name: str
    records: int
    outcome: str


def relocate(source: Shard, target: Shard, name: str, batch_records: int) -> Relocated:
    """Move collection ``name`` from ``source`` to ``target`` in pages of ``batch_records``."""
    if target.get(name) is not None:
        if source.get(name) is not None:
            source.delete(name)
        return Relocated(name, 0, "finished")
    original = source.get(name)
    if original is None:
        return Relocated(name, 0, "gone")
    before = _fingerprint(original)
    staging = _fresh_staging(target, name, original.metadata or {})
    copied = _copy_records(original, staging, batch_records)
    after = source.get(name)
    if after is None:
        target.delete(staging.name)
        return Relocated(name, 0, "gone")
    if _fingerprint(after) != before or _count(staging) != before[0]:
        target.delete(staging.name)
        return Relocated(name, copied, "changed")
    guard("switch a moved collection", lambda: staging.modify(name=name))
    source.delete(name)
    return Relocated(name, copied, "moved")


def _fresh_staging(target: Shard, name: str, metadata: Mapping[str, Any]) -> ChromaCollection:
    """An empty staging collection on ``target`` (one left by a run cut short is dropped: it
    may lack records, and pages are not resumable across a source that changed)."""
    staging = staging_name(name)
    if target.get(staging) is not None:
        target.delete(staging)
    return target.create(staging, dict(metadata))


def _copy_records(source: ChromaCollection, target: ChromaCollection, batch_records: int) -> int:
    """Every record of ``source`` (ids, documents, metadatas, embeddings) upserted into
    ``target``, ``batch_records`` at a time, so memory holds one page."""
    copied = 0
    while True:
        page = guard("read records to move", partial(
            source.get, include=INCLUDE, limit=batch_records, offset=copied))
        ids = page["ids"]
        if not ids:
            return copied
        guard("write moved records", partial(
            target.upsert, ids=ids, documents=page["documents"], metadatas=page["metadatas"],
            embeddings=page["embeddings"]))
        copied += len(ids)


def _count(collection: ChromaCollection) -> int:
    return int(guard("count records", collection.count))


def _fingerprint(collection: ChromaCollection) -> tuple[int, str]:
    """What says a collection was not written: its record count and its metadata (the
    manifest, written last by every index run)."""
    return _count(collection), repr(sorted((collection.metadata or {}).items()))

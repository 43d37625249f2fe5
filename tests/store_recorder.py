"""A real Chroma client that records how much each call handed over, per collection.

Wraps the client a ``Store`` opened (embedded or server): every call still goes to Chroma;
the recorder only counts the ids each read returned and each write carried, so a test can
show that a run works in bounded batches and reads only what it needs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from freshmark.adapters.store.chroma import Store


@dataclass
class Traffic:
    """Ids per call, per collection name: what was read and what was written."""

    reads: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    writes: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    listings: int = 0  # reads of the list of every collection

    def clear(self) -> None:
        self.reads.clear()
        self.writes.clear()
        self.listings = 0

    def largest_write(self) -> int:
        return max((n for sizes in self.writes.values() for n in sizes), default=0)

    def largest_read(self) -> int:
        return max((n for sizes in self.reads.values() for n in sizes), default=0)

    def read_total(self, collection: str | None = None) -> int:
        return sum(n for name, sizes in self.reads.items() if collection in (None, name)
                   for n in sizes)

    def written_total(self) -> int:
        return sum(n for sizes in self.writes.values() for n in sizes)


class _Collection:
    def __init__(self, collection: Any, traffic: Traffic):
        self._collection = collection
        self._traffic = traffic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        got = self._collection.get(*args, **kwargs)
        self._traffic.reads[self._collection.name].append(len(got["ids"]))
        return got

    def upsert(self, *args: Any, **kwargs: Any) -> Any:
        self._traffic.writes[self._collection.name].append(len(kwargs["ids"]))
        return self._collection.upsert(*args, **kwargs)

    def update(self, *args: Any, **kwargs: Any) -> Any:
        self._traffic.writes[self._collection.name].append(len(kwargs["ids"]))
        return self._collection.update(*args, **kwargs)


class _Client:
    def __init__(self, client: Any, traffic: Traffic):
        self._client = client
        self._traffic = traffic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def list_collections(self, *args: Any, **kwargs: Any) -> Any:
        self._traffic.listings += 1
        return self._client.list_collections(*args, **kwargs)

    def get_collection(self, *args: Any, **kwargs: Any) -> _Collection:
        return _Collection(self._client.get_collection(*args, **kwargs), self._traffic)

    def get_or_create_collection(self, *args: Any, **kwargs: Any) -> _Collection:
        return _Collection(self._client.get_or_create_collection(*args, **kwargs), self._traffic)


def recording(store: Store) -> Traffic:
    """Record every collection call ``store`` makes from now on."""
    traffic = Traffic()
    for shard in store.shards:
        shard.client = _Client(shard.client, traffic)
    return traffic

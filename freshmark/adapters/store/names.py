"""Repository names held in the store: name -> key and key -> name, one read each.

A repository indexed by path is shown by a name no other indexed repository has
(``services/repos.unique_name``). Choosing one used to list every manifest of the store, a
cost that grows with the repositories held; the registry answers "who holds this name" and
"which name does this key have" with one ``get`` by id. It is a small Chroma collection
(``REGISTRY``, never listed as a branch: only ``fm-`` names are) in the same store, so every
host sharing the store sees the same names, with records ``name:<name>`` (metadata ``key``)
and ``key:<key>`` (metadata ``name``). A claim is Chroma's ``add``, which keeps the first
record of an id and ignores later ones: two processes claiming one name at once both read
back the same owner.

A store from before the registry is migrated on first use: the names of its manifests are
written once, then ``SEEDED`` marks the registry complete (one listing, ever, per store).
Chroma records need a vector: each holds the same one-dimensional placeholder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from freshmark.adapters.store.calls import MAX_BATCH, batches, guard
from freshmark.adapters.store.client import ChromaCollection
from freshmark.core.manifest import Manifest

REGISTRY = "fmnames"
SEEDED = "seeded"
_PLACEHOLDER = [1.0]


def _name_id(name: str) -> str:
    return f"name:{name}"


def _key_id(key: str) -> str:
    return f"key:{key}"


class NameRegistry:
    """The store's repository names (see the module docstring)."""

    def __init__(self, collection: ChromaCollection):
        self._collection = collection

    def ensure_seeded(self, manifests: Callable[[], Iterable[Manifest]]) -> None:
        """Write the names of a store indexed before the registry (once: ``SEEDED`` after)."""
        if self._get([SEEDED]):
            return
        records: dict[str, dict[str, str]] = {}
        for manifest in manifests():
            records.setdefault(_name_id(manifest.repo), {"key": manifest.repo_key})
            records.setdefault(_key_id(manifest.repo_key), {"name": manifest.repo})
        self._add(list(records.items()))
        self._add([(SEEDED, {"seeded": "1"})])

    def name_of(self, key: str) -> str | None:
        got = self._get([_key_id(key)])
        return got[0].get("name") if got else None

    def owner_of(self, name: str) -> str | None:
        got = self._get([_name_id(name)])
        return got[0].get("key") if got else None

    def claim(self, name: str, key: str) -> bool:
        """Take ``name`` for ``key`` (which has none yet) unless another key holds it; True
        when ``key`` holds it. Both records go in one write; when the name was taken, the
        key's record written with it is deleted again (the rare case pays the second write)."""
        self._add([(_name_id(name), {"key": key}), (_key_id(key), {"name": name})])
        if self.owner_of(name) == key:
            return True
        if self.name_of(key) == name:
            guard("release a repository name",
                  lambda: self._collection.delete(ids=[_key_id(key)]))
        return False

    def release(self, key: str) -> None:
        """``key`` is no longer indexed: its name is free for another repository."""
        name = self.name_of(key)
        ids = [_key_id(key)]
        if name is not None and self.owner_of(name) == key:
            ids.append(_name_id(name))
        guard("release a repository name", lambda: self._collection.delete(ids=ids))

    def _get(self, ids: list[str]) -> list[dict[str, str]]:
        got = guard("read repository names",
                    lambda: self._collection.get(ids=ids, include=["metadatas"]))
        return [dict(m or {}) for m in got["metadatas"]]

    def _add(self, records: list[tuple[str, dict[str, str]]]) -> None:
        for part in batches(records, MAX_BATCH):
            def add(part: Any = part) -> Any:
                return self._collection.add(ids=[i for i, _ in part],
                                            metadatas=[m for _, m in part],
                                            embeddings=[_PLACEHOLDER] * len(part))

            guard("write repository names", add)

"""A bounded, thread-safe map that drops its least recently used entry first.

What a process keeps of immutable things it meets request after request (an overlay's records
per collection state, a blob's definitions). ``functools.lru_cache`` keys on a function's
arguments, and these values are read through a store or a repository that must not be part of
the key, so the map is kept here, once, for every such cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``size`` entries; ``get`` and ``put`` mark an entry as the most recently used."""

    def __init__(self, size: int):
        self.size = size
        self._held: OrderedDict[K, V] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._guard:
            found = self._held.get(key)
            if found is not None:
                self._held.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> V:
        with self._guard:
            self._held[key] = value
            self._held.move_to_end(key)
            while len(self._held) > self.size:
                self._held.popitem(last=False)
        return value

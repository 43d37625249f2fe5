"""The indexed text of the graph's records a slice serves, read by id when it is needed.

The symbol graph holds chunk metadata only (``graph_for``: its cost would grow with the index
otherwise), but verification compares a changed file's lines with the text a chunk was
indexed from (``core/locate.as_indexed``), and finds an overload or a part by it: a record
without it is "re-read before use" however unchanged its code is. ``IndexedText`` reads the
text of the records a slice's sections serve (callers, types, related symbols) in one
``get`` by id per batch, so the cost grows with what the slice shows.
"""

from __future__ import annotations

from collections.abc import Iterable

from freshmark.core.ports import BranchView
from freshmark.core.stamp import ChunkRecord


class IndexedText:
    """Records of one branch with their indexed text, each read once."""

    def __init__(self, index: BranchView | None):
        self.index = index
        self._held: dict[str, ChunkRecord] = {}

    def load(self, records: Iterable[ChunkRecord]) -> None:
        """Read the text of ``records`` (those without it, not yet held) in one call."""
        wanted = list(dict.fromkeys(r.id for r in records
                                    if not r.text and r.id not in self._held))
        if wanted and self.index is not None:
            self._held.update((r.id, r) for r in self.index.get(ids=wanted, include_text=True))

    def of(self, record: ChunkRecord) -> ChunkRecord:
        """``record`` with its indexed text; as it is when the index no longer holds it."""
        if record.text:
            return record
        self.load([record])
        return self._held.get(record.id, record)

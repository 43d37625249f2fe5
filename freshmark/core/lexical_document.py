"""What the lexical index reads of a chunk: its tokens, and the few fields it filters on.

A chunk's document is its id, its path, its tokens (``document_tokens``: the tokens of its
path, its symbol and its text, as BM25 counts them), its file kind (the search kind) and its
status (tombstoned or not). A batch of a split index run, written by another process, sends
these back to its run's coordinator with its counts: the coordinator's lexical index is then
written as the batches come in, not read back from the store after the run, and the tokenizing
is done where the batch ran, not in the coordinator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass

from freshmark.core.stamp import ChunkRecord
from freshmark.core.tokenize import iter_tokens


def document_tokens(record: ChunkRecord) -> list[str]:
    """What BM25 indexes for a chunk: its path, its symbol name and its text."""
    return [*iter_tokens(record.path), *iter_tokens(record.symbol), *iter_tokens(record.text)]


@dataclass(frozen=True)
class LexicalDocument:
    id: str
    path: str
    tokens: str  # space-separated, as the index's tokenizer splits them again
    file_kind: str
    status: str

    @classmethod
    def of(cls, record: ChunkRecord) -> LexicalDocument:
        return cls(record.id, record.path, " ".join(document_tokens(record)), record.file_kind,
                   record.status)

    def to_row(self) -> list[str]:
        return list(astuple(self))

    @classmethod
    def from_row(cls, row: Sequence[str]) -> LexicalDocument:
        """A row as ``to_row`` wrote it (``ValueError`` for anything else)."""
        if len(row) != 5 or not all(isinstance(value, str) for value in row):
            raise ValueError("a lexical document row is five strings")
        return cls(*row)

    @property
    def size_bytes(self) -> int:
        """About what the row takes as JSON (escapes aside)."""
        return sum(len(value.encode("utf-8")) for value in astuple(self)) + 5 * 4

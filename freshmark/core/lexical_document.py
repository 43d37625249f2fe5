"""What the lexical index reads of a chunk: its tokens, and the few fields it filters on.

A chunk's document is its id, its path, its tokens (``document_tokens``: the tokens of its
path, its symbol and its text, as BM25 counts them), its file kind (the search kind) and its
status (tombstoned or not). A batch of a split index run, written by another process, sends
these back to its run's coordinator with its counts: the coordinator's lexical index is then
written as the batches come in, not read back from the store after the run, and the tokenizing
is done where the batch ran, not in the coordinator.

A document also carries its ``content_key``: 64 bits of its text's hash, file kind and status,
everything it is made of besides what its id names (path and symbol). A catch-up that
restamps a file's unchanged chunks (a new commit, the same text) compares keys with the
committed documents and skips those chunks instead of tokenizing them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import astuple, dataclass

from freshmark.core.stamp import ChunkRecord
from freshmark.core.tokenize import iter_tokens


def document_tokens(record: ChunkRecord) -> list[str]:
    """What BM25 indexes for a chunk: its path, its symbol name and its text."""
    return [*iter_tokens(record.path), *iter_tokens(record.symbol), *iter_tokens(record.text)]


def content_key(text_sha256: str, file_kind: str, status: str) -> int:
    """A document's content as 64 bits; 0 (never equal to a written key) when the text's
    hash is unknown, as in records an older freshmark stamped."""
    if not text_sha256:
        return 0
    digest = hashlib.blake2b(f"{text_sha256}\0{file_kind}\0{status}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big") or 1


def record_content_key(record: ChunkRecord) -> int:
    """The key of the document ``record`` makes, without tokenizing it."""
    return content_key(record.text_sha256, record.file_kind, record.status)


ROW_FIELDS = 6


@dataclass(frozen=True)
class LexicalDocument:
    id: str
    path: str
    tokens: str  # space-separated, as the index's tokenizer splits them again
    file_kind: str
    status: str
    text_sha256: str

    @classmethod
    def of(cls, record: ChunkRecord) -> LexicalDocument:
        return cls(record.id, record.path, " ".join(document_tokens(record)), record.file_kind,
                   record.status, record.text_sha256)

    @property
    def content_key(self) -> int:
        return content_key(self.text_sha256, self.file_kind, self.status)

    def to_row(self) -> list[str]:
        return list(astuple(self))

    @classmethod
    def from_row(cls, row: Sequence[str]) -> LexicalDocument:
        """A row as ``to_row`` wrote it (``ValueError`` for anything else)."""
        if len(row) != ROW_FIELDS or not all(isinstance(value, str) for value in row):
            raise ValueError(f"a lexical document row is {ROW_FIELDS} strings")
        return cls(*row)

    @property
    def size_bytes(self) -> int:
        """About what the row takes as JSON (escapes aside)."""
        return sum(len(value.encode("utf-8")) for value in astuple(self)) + ROW_FIELDS * 4

"""A split run's first lexical index, written as its batches come in, not read back after it.

A first run writes its records to the host's lexical index as it writes them to the store
(``ports.LexicalRunWriter``). When the run is split, its batches are written by other
processes too, so each batch, wherever it runs, collects what the lexical index reads of the
records it writes (``BatchDocuments``: ids, paths, tokens, file kinds, statuses; tokenized
where the batch ran, so that work splits too) and sends that back with its counts; the
coordinator hands each batch's documents to the run's writer once, as the batch comes in
(``SplitFeed``), while the other batches are still being embedded. The index is then adopted
after the run without a read of the collection.

A batch sends no documents when it wrote more than whole new records (metadata only, or chunks
an earlier attempt had written, which it found unchanged), or more than
``MAX_BATCH_DOCUMENT_BYTES`` of them (a batch of big files: the bound of what one result carries
through Redis); the coordinator then reads that batch's paths back from the store. Anything
that fails on the way leaves the writer incomplete, and the run is caught up from the store
after it, as any run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from freshmark.core.lexical_document import LexicalDocument
from freshmark.core.ports import BranchView, LexicalRunWriter
from freshmark.services.indexing.batches import LayerBatch

log = logging.getLogger(__name__)

MAX_BATCH_DOCUMENT_BYTES = 4 * 1024 * 1024


class BatchDocuments:
    """The ``LexicalRunWriter`` of one batch of a split run: what its coordinator's lexical
    index needs of the records the batch writes, up to ``max_bytes``."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.documents: list[LexicalDocument] | None = []  # None: the coordinator reads back
        self._bytes = 0
        self._max_bytes = MAX_BATCH_DOCUMENT_BYTES if max_bytes is None else max_bytes

    def written(self, documents: Sequence[LexicalDocument]) -> None:
        for document in documents:
            if self.documents is None:
                return
            self._bytes += document.size_bytes
            if self._bytes > self._max_bytes:
                self.missed()  # held no longer: the batch's text is not kept whole
            else:
                self.documents.append(document)

    def missed(self) -> None:
        self.documents = None

    def finish(self, view: BranchView) -> None:
        """Nothing to publish: the coordinator's writer does."""

    def close(self) -> None:
        self.documents = None

    def to_json(self) -> str:
        """The documents as a batch result carries them; '' when the coordinator must read the
        batch back."""
        if self.documents is None:
            return ""
        return json.dumps({"documents": [d.to_row() for d in self.documents]},
                          ensure_ascii=False)


def batch_paths(batch: LayerBatch) -> set[str]:
    return {p for c in batch.changes for p in (c.old_path, c.new_path) if p}


class SplitFeed:
    """Hands each batch of a split run to the run's lexical writer once, as it comes in: the
    documents it sent, or its paths read back from the store (``index``)."""

    def __init__(self, writer: LexicalRunWriter, index: BranchView,
                 batches: Sequence[LayerBatch]) -> None:
        self.writer, self.index, self.batches = writer, index, batches
        self.taken: set[int] = set()
        self.read_back = 0  # batches whose records were read back from the store

    def take(self, number: int, sent: str) -> None:
        if number in self.taken:  # a batch is written to the index once, however often it ran
            return
        self.taken.add(number)
        try:
            self.writer.written(self._documents(number, sent))
        except Exception as exc:  # noqa: BLE001 - the index only saves a read: caught up later
            log.warning("lexical documents of batch %d not taken (%s: %s): the index is caught "
                        "up from the store after the run", number + 1, type(exc).__name__, exc)
            self.writer.missed()

    def _documents(self, number: int, sent: str) -> list[LexicalDocument]:
        if sent:
            return [LexicalDocument.from_row(row) for row in json.loads(sent)["documents"]]
        self.read_back += 1
        return [LexicalDocument.of(r) for r in self.index.records_for_paths(
            batch_paths(self.batches[number]), include_text=True)]

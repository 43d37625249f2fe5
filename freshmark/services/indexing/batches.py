"""Batches of an index run, and the fan-out that spreads them over worker processes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

from freshmark.adapters.embedding.cache import EmbeddingCache
from freshmark.core.config import Config
from freshmark.core.ports import Embedder
from freshmark.core.tree import FileChange


@dataclass(frozen=True)
class IndexTools:
    """What every run and batch of one process works with: the config (layers, rules), the
    embedder and the embedding cache."""

    config: Config
    embedder: Embedder
    cache: EmbeddingCache


@dataclass(frozen=True)
class RunStamp:
    """What every record of one run is stamped with; a batch run by another process gets it
    from the coordinating run, so its records are the ones this process would have written."""

    repo_key: str
    repo_name: str
    branch: str
    head: str
    generation: int
    when: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunStamp:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class LayerBatch:
    """Changes of one layer planned and written together (``plan.batch_changes``)."""

    layer: str
    changes: tuple[FileChange, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "changes": [asdict(c) for c in self.changes]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LayerBatch:
        return cls(data["layer"], tuple(FileChange(**c) for c in data["changes"]))


# Runs one claimed batch in this process; its argument raises ``BatchLost`` once the claim is
# gone (called before every write), and it returns the batch's ``batch_counts`` (with, under
# ``LEXICAL_RESULT``, what the run's lexical index needs of the records it wrote, when asked).
BatchRunner = Callable[[LayerBatch, Callable[[], None]], dict[str, Any]]

# The key of a batch's result that holds its lexical documents (``split_lexical``, JSON): the
# fan-out carries it to the coordinator apart from the counts.
LEXICAL_RESULT = "lexical"

# Called in the coordinating process once per batch, as soon as its result is in: the batch's
# number and its lexical documents as the batch sent them ('' : none sent).
LexicalTaker = Callable[[int, str], None]


class FanOut(Protocol):
    """Spreads a large run's batches over worker processes (``workers.scaleout``).

    ``run`` returns each batch's counts, in batch order, once every batch is in; the calling
    process works on batches itself through ``run_here`` while it waits. With ``take_lexical``
    every batch, wherever it runs, also sends back its lexical documents, handed to
    ``take_lexical`` in this process once per batch as the batches come in.
    """

    files_per_batch: int

    def wants(self, files: int) -> bool: ...

    def run(self, stamp: RunStamp, batches: Sequence[LayerBatch], run_here: BatchRunner,
            take_lexical: LexicalTaker | None = None) -> list[dict[str, Any]]: ...


def no_claim() -> None:
    """A run in one process holds no claim that could be lost."""

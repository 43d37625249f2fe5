"""What one index run did: the ``index --json`` summary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SKIPPED_PATHS_PER_REASON = 3

# What a batch adds to its run's summary (``IndexSummary.batch_counts``).
_BATCH_COUNT_FIELDS = (
    "files_seen", "files_changed", "files_skipped", "skipped_paths", "files_chunk_capped",
    "chunks_added",
    "chunks_updated", "chunks_unchanged", "chunks_tombstoned", "embeddings_computed",
    "embeddings_reused", "embed_seconds",
)


@dataclass
class IndexSummary:
    """What one index run did; ``to_dict`` is the ``index --json`` output."""

    repo: str
    branch: str
    collection: str
    embedder: str
    commit: str = ""
    previous_commit: str | None = None
    layers: list[str] = field(default_factory=list)
    files_seen: int = 0
    files_changed: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    # The first few paths of each reason: a count alone leaves the user to hunt for the files.
    skipped_paths: dict[str, list[str]] = field(default_factory=dict)
    files_chunk_capped: int = 0  # files over max_chunks_per_file, indexed as line windows
    chunks_added: int = 0
    chunks_updated: int = 0
    chunks_unchanged: int = 0
    chunks_tombstoned: int = 0
    embeddings_computed: int = 0
    embeddings_reused: int = 0
    embed_seconds: float = 0.0
    seconds: float = 0.0
    stamped_after_seconds: float = 0.0  # from the run's start to its manifest written
    lexical_seconds: float = 0.0  # the lexical index brought up after the stamp
    noop: bool = True
    layered_on: str | None = None  # an overlay's base branch
    base_note: str | None = None  # why a base the user named did not apply
    overlay_chunks: int | None = None  # chunks in an overlay's own collection after the run
    chunks_purged: int = 0  # overlay chunks dropped because the base serves their files again
    batches: int = 0  # batch tasks the run was split into (0: it ran in one process)
    batches_read_back: int = 0  # of those, read back from the store for the lexical index

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def skip(self, reason: str, path: str = "") -> None:
        self.files_skipped[reason] = self.files_skipped.get(reason, 0) + 1
        if path:
            self._name_skipped(reason, [path])

    def _name_skipped(self, reason: str, paths: list[str]) -> None:
        named = self.skipped_paths.setdefault(reason, [])
        named.extend(paths[:SKIPPED_PATHS_PER_REASON - len(named)])

    def batch_counts(self) -> dict[str, Any]:
        """The counts a batch contributes to its run (JSON-able: they travel through Redis)."""
        return {name: getattr(self, name) for name in _BATCH_COUNT_FIELDS}

    def add_batch_counts(self, counts: dict[str, Any]) -> None:
        for name in _BATCH_COUNT_FIELDS:
            if name == "files_skipped":
                for reason, count in counts.get(name, {}).items():
                    self.files_skipped[reason] = self.files_skipped.get(reason, 0) + count
            elif name == "skipped_paths":
                for reason, paths in counts.get(name, {}).items():
                    self._name_skipped(reason, paths)
            else:
                setattr(self, name, getattr(self, name) + counts.get(name, 0))

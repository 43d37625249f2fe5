"""Pure planning of an index run: which chunks to add, re-stamp, re-embed or tombstone.

No I/O here. The indexer reads git and the store, hands this module plain records, and writes
back what it returns. Every decision is keyed by deterministic chunk ids, so planning the same
change twice gives the same writes (a re-run after a crash is a no-op or finishes the job).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from freshmark.core.chunking.inline_tests import inline_test_spans
from freshmark.core.chunking.model import MODULE_SYMBOL
from freshmark.core.embed_text import vector_key
from freshmark.core.locate import Piece, is_module_code, pair_in_place, pair_pieces
from freshmark.core.stamp import (
    LIVE,
    TOMBSTONED,
    ChunkRecord,
    chunk_id,
    own_name,
    sha256_hex,
)
from freshmark.core.tree import FileChange

# Stamp fields compared to decide whether a chunk with unchanged text needs a metadata rewrite.
_RESTAMP_FIELDS = (
    "commit",
    "blob_sha",
    "content_sha256",
    "start_line",
    "end_line",
    "symbol",
    "signature",
    "kind",
    "file_kind",
    "layer",
    "language",
    "status",
    "imports",
    "references",
    "repo",
    "branch",
    "name",
)


@dataclass(frozen=True)
class FileContext:
    """What every chunk of one file version shares in its stamp."""

    repo: str
    branch: str
    commit: str
    path: str
    blob_sha: str
    content_sha256: str
    language: str
    file_kind: str
    layer: str
    indexed_at: str


@dataclass
class FilePlan:
    """Writes for one path. ``embed`` records need a vector; ``restamp`` ones keep theirs."""

    embed: list[ChunkRecord] = field(default_factory=list)
    restamp: list[ChunkRecord] = field(default_factory=list)
    tombstone: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    unchanged: int = 0

    def extend(self, other: FilePlan) -> None:
        self.embed.extend(other.embed)
        self.restamp.extend(other.restamp)
        self.tombstone.extend(other.tombstone)
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged

    @property
    def records(self) -> int:
        """Records this plan holds until it is written (new ones with their text)."""
        return len(self.embed) + len(self.restamp) + len(self.tombstone)


def build_records(ctx: FileContext, chunks: Sequence[Any]) -> list[ChunkRecord]:
    """Stamp chunker output (``chunking.Chunk``) with the file's context.

    Chunks sharing a symbol (overloads, parts of a split function) are told apart by their
    ordinal in file order, which keeps ids stable when unrelated code moves.
    """
    seen: dict[str, int] = {}
    records: list[ChunkRecord] = []
    tests = inline_test_spans(ctx.language, chunks) if ctx.file_kind == "source" else []
    for chunk in chunks:
        in_test = any(start <= chunk.start_line and chunk.end_line <= end for start, end in tests)
        ordinal = seen.get(chunk.symbol, 0)
        seen[chunk.symbol] = ordinal + 1
        records.append(
            ChunkRecord(
                repo=ctx.repo,
                branch=ctx.branch,
                commit=ctx.commit,
                path=ctx.path,
                symbol=chunk.symbol,
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                indexed_at=ctx.indexed_at,
                blob_sha=ctx.blob_sha,
                content_sha256=ctx.content_sha256,
                kind=chunk.kind,
                language=ctx.language,
                signature=chunk.signature,
                file_kind="test" if in_test else ctx.file_kind,
                layer=ctx.layer,
                status=LIVE,
                id=chunk_id(ctx.path, chunk.symbol, ordinal),
                text=chunk.text,
                text_sha256=sha256_hex(chunk.text),
                imports=list(chunk.imports),
                references=list(chunk.references),
                name=own_name(chunk.symbol),
            )
        )
    return records


def _stamp_differs(old: ChunkRecord, new: ChunkRecord) -> bool:
    return old.tombstoned_in is not None or any(
        getattr(old, name) != getattr(new, name) for name in _RESTAMP_FIELDS
    )


def plan_file(
    existing: Iterable[ChunkRecord],
    fresh: Sequence[ChunkRecord],
    commit: str,
    when: str,
    generation: int,
) -> FilePlan:
    """Bring the stored chunks of one path to ``fresh`` (its chunks at ``commit``).

    New ids are added, ids whose text changed are re-embedded, ids whose text is the same but
    whose stamp moved are re-stamped, and stored live ids missing from ``fresh`` (a symbol that
    is gone) are tombstoned, never dropped.
    """
    plan = FilePlan()
    existing = list(existing)
    keep_ids(existing, fresh)
    old_by_id = {r.id: r for r in existing}
    for record in fresh:
        record.updated_gen = generation
        old = old_by_id.get(record.id)
        if old is None:
            plan.embed.append(record)
            plan.added += 1
        elif old.text_sha256 != record.text_sha256:
            plan.embed.append(record)
            plan.updated += 1
        elif _stamp_differs(old, record):
            plan.restamp.append(record)
            plan.unchanged += 1
        else:
            plan.unchanged += 1
    fresh_ids = {r.id for r in fresh}
    gone = [r for r in old_by_id.values() if r.id not in fresh_ids]
    plan.tombstone.extend(tombstones(gone, commit, when, generation))
    return plan


def keep_ids(existing: Sequence[ChunkRecord], fresh: Sequence[ChunkRecord]) -> None:
    """Give the fresh chunks of a name held more than once (overloads, a split definition's
    parts) the ids of the stored chunks they continue, paired by ``pair_pieces`` (the same
    text, then the same signature: a changed signature is another overload). An ordinal alone
    shifts when one of them is removed: the removed overload's id would take the next one's
    code and the last one be tombstoned, a false history on both. One that continues none
    gets an id no stored chunk holds, so a stored one left unpaired is tombstoned as itself.

    Module code (``<module>``, ``<module>#N``) is one group: a positional name only counts
    blocks, so a line added above renumbers every block below it. A block keeps the id of
    the stored one with its text (re-stamped under its new name, not tombstoned and added
    again), else of the one in its place (``pair_in_place``: the same name and part)."""
    live: dict[str, list[ChunkRecord]] = {}
    for record in existing:
        if record.status == LIVE:
            live.setdefault(_group(record.symbol), []).append(record)
    fresh_by_symbol: dict[str, list[ChunkRecord]] = {}
    for record in fresh:
        fresh_by_symbol.setdefault(_group(record.symbol), []).append(record)
    taken = {record.id for record in existing}
    for symbol, group in fresh_by_symbol.items():
        before = live.get(symbol, [])
        if len(group) == 1 and len(before) <= 1:
            if before:  # one definition then and now: the same, whatever changed in it
                group[0].id = before[0].id
            continue
        old, new = [_piece(r) for r in before], [_piece(r) for r in group]
        pairs = pair_in_place(old, new, _places(before), _places(group)) \
            if is_module_code(symbol) else pair_pieces(old, new)
        continued = {new_index: before[old_index].id for old_index, new_index in pairs.items()}
        used = taken | set(continued.values())
        for index, record in enumerate(group):
            if index in continued:
                record.id = continued[index]
                continue
            ordinal = 0
            while chunk_id(record.path, record.symbol, ordinal) in used:
                ordinal += 1
            record.id = chunk_id(record.path, record.symbol, ordinal)
            used.add(record.id)


def _group(symbol: str) -> str:
    return MODULE_SYMBOL if is_module_code(symbol) else symbol


def _places(records: Sequence[ChunkRecord]) -> list[tuple[str, int]]:
    """Each record's name and its ordinal among the records of that name in file order."""
    places: dict[int, tuple[str, int]] = {}
    seen: Counter[str] = Counter()
    for index in sorted(range(len(records)), key=lambda i: records[i].start_line):
        symbol = records[index].symbol
        places[index] = (symbol, seen[symbol])
        seen[symbol] += 1
    return [places[index] for index in range(len(records))]


def _piece(record: ChunkRecord) -> Piece:
    # Stored chunks are read without their text: compared by its hash and their signature.
    return Piece(record.start_line, record.signature, digest=record.text_sha256)


def tombstones(
    records: Iterable[ChunkRecord],
    commit: str,
    when: str,
    generation: int,
    successor: str | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Metadata updates that tombstone the live ones among ``records`` (already dead stay as is)."""
    return [
        (
            r.id,
            {
                "status": TOMBSTONED,
                "tombstoned_in": commit,
                "tombstoned_at": when,
                "successor": successor or "",
                "updated_gen": generation,
                "name": own_name(r.symbol),
            },
        )
        for r in records
        if r.status == LIVE
    ]


def reusable_vectors(
    needed: Sequence[ChunkRecord], donors: Iterable[ChunkRecord]
) -> dict[str, str]:
    """Map vector key (``embed_text``) -> id of a stored chunk of the same symbol and text,
    whose vector can be copied. Renamed files and moved code re-embed nothing: the copied
    vector's name line holds the old path, the one difference, until the chunk changes."""
    keys_by_code: dict[tuple[str, str], set[str]] = {}
    for record in needed:
        keys_by_code.setdefault((record.symbol, record.text_sha256), set()).add(
            vector_key(record))
    out: dict[str, str] = {}
    for donor in donors:
        for key in keys_by_code.get((donor.symbol, donor.text_sha256), ()):
            out.setdefault(key, donor.id)
    return out


def batch_changes(changes: Sequence[FileChange],
                  files_per_batch: int) -> list[list[FileChange]]:
    """Split one layer's changes into batches of about ``files_per_batch``, in diff order.

    Changes that share a path stay in one batch (a file renamed away and a new file added at its
    old path; a rename chain): a batch plans its paths from the store as they were before it,
    and batches of a split run are written in any order, so such a pair must be planned together.
    A batch may exceed ``files_per_batch`` only by the rest of such a group.
    """
    size = max(1, files_per_batch)
    groups = _groups_sharing_a_path(changes)
    batches: list[list[FileChange]] = []
    current: list[int] = []
    for group in groups:
        current.extend(group)
        if len(current) >= size:
            batches.append([changes[i] for i in sorted(current)])
            current = []
    if current:
        batches.append([changes[i] for i in sorted(current)])
    return batches


def path_groups(changes: Sequence[FileChange]) -> list[list[FileChange]]:
    """``changes`` in groups that share no path with each other (``batch_changes``' unit): the
    writes of one group never touch the chunks another group plans from."""
    return [[changes[i] for i in sorted(group)] for group in _groups_sharing_a_path(changes)]


def _groups_sharing_a_path(changes: Sequence[FileChange]) -> list[list[int]]:
    """Indexes of ``changes`` grouped by shared paths (union-find), groups in first-seen order."""
    parent = list(range(len(changes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, change in enumerate(changes):
        for path in (change.old_path, change.new_path):
            if not path:
                continue
            if path in owner:
                parent[root(i)] = root(owner[path])
            else:
                owner[path] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(changes)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])

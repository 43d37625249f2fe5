"""The stamp every stored chunk carries (SPEC §1), and its round trip through Chroma metadata.

Field names here are the public contract: JSON output, HTTP and MCP answers use them verbatim.
Chroma metadata holds scalars only, so list fields travel as JSON text and absent optional
fields as empty strings.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from freshmark.core.chunking.model import CONTAINER_KINDS
from freshmark.core.kinds import EXCLUDED_FILE_KINDS

MANDATORY_FIELDS: tuple[str, ...] = (
    "repo",
    "branch",
    "commit",
    "path",
    "symbol",
    "start_line",
    "end_line",
    "indexed_at",
    "blob_sha",
    "content_sha256",
)

LIVE = "live"
TOMBSTONED = "tombstoned"

_LIST_FIELDS = ("imports", "references")
_OPTIONAL_TEXT = ("tombstoned_in", "tombstoned_at", "successor")


def utc_now_iso() -> str:
    """UTC time as ``2026-09-29T10:41:00Z`` (seconds precision)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def own_name(symbol: str) -> str:
    """The last part of a dotted symbol: ``Mux.With`` -> ``With``."""
    return symbol.rsplit(".", 1)[-1]


def chunk_id(path: str, symbol: str, ordinal: int) -> str:
    """Deterministic id of a chunk within a branch collection: a re-run upserts the same ids.

    ``ordinal`` tells apart chunks of one file sharing a symbol name (overloads, split parts).
    """
    return sha256_hex(f"{path}\0{symbol}\0{ordinal}")[:32]


@dataclass
class ChunkRecord:
    """One stamped chunk as stored and as returned to callers."""

    # SPEC §1 mandatory set
    repo: str
    branch: str
    commit: str
    path: str
    symbol: str
    start_line: int
    end_line: int
    indexed_at: str
    blob_sha: str
    content_sha256: str
    # SPEC §1 additional fields
    kind: str = "block"
    language: str = ""
    signature: str = ""
    file_kind: str = "source"
    layer: str = "default"
    status: str = LIVE
    tombstoned_in: str | None = None
    tombstoned_at: str | None = None
    successor: str | None = None
    # Not part of the stamp, kept for retrieval and the symbol graph.
    id: str = ""
    text: str = ""
    text_sha256: str = ""
    imports: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    updated_gen: int = 0
    # The symbol's own name (``With`` of ``Mux.With``): a look-up by a bare name reads the
    # definitions so named through it, an indexed field. "" in chunks stamped before it.
    name: str = ""

    def to_metadata(self) -> dict[str, Any]:
        """Scalar-only metadata for Chroma (``text`` goes into the document, ``id`` is the id)."""
        meta: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("id", "text"):
                continue
            value = getattr(self, f.name)
            if f.name in _LIST_FIELDS:
                value = json.dumps(value, ensure_ascii=False)
            elif value is None:
                value = ""
            meta[f.name] = value
        return meta

    @classmethod
    def from_metadata(
        cls, record_id: str, document: str | None, meta: dict[str, Any]
    ) -> ChunkRecord:
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {k: v for k, v in meta.items() if k in known}
        for name in _LIST_FIELDS:
            raw = values.get(name)
            values[name] = json.loads(raw) if isinstance(raw, str) and raw else []
        for name in _OPTIONAL_TEXT:
            if not values.get(name):
                values[name] = None
        missing = [n for n in MANDATORY_FIELDS if n not in values]
        for name in missing:  # an incomplete stamp stays visible as such (verdict: unverifiable)
            values[name] = 0 if name in ("start_line", "end_line") else ""
        return cls(id=record_id, text=document or "", **values)

    def stamp(self) -> dict[str, Any]:
        """The SPEC §1 view: exactly the stamp fields, under their public names."""
        data = asdict(self)
        for name in ("id", "text", "text_sha256", "imports", "references", "updated_gen",
                     "name"):
            data.pop(name)
        return data

    @property
    def head_lines(self) -> int:
        """How many of ``text``'s first lines are the definition's head, carried in front of a
        later part of a split definition (SPEC §5: each part keeps the signature) and so not
        at ``start_line``; 0 for a whole definition, a block or an outline."""
        if self.kind in CONTAINER_KINDS or not self.text or self.end_line < self.start_line:
            return 0
        return max(0, self.text.count("\n") + 1 - (self.end_line - self.start_line + 1))

    @property
    def own_text(self) -> str:
        """``text`` at the chunk's own lines (``start_line``..``end_line``): a later part's
        carried head left out."""
        return self.text.split("\n", self.head_lines)[-1] if self.head_lines else self.text

    @property
    def is_live(self) -> bool:
        return self.status == LIVE

    @property
    def is_excluded_kind(self) -> bool:
        return self.file_kind in EXCLUDED_FILE_KINDS


def missing_mandatory(stamp: dict[str, Any]) -> list[str]:
    """SPEC §1 mandatory fields absent or empty in a stamp (any source, e.g. pasted JSON)."""
    return [n for n in MANDATORY_FIELDS if stamp.get(n) in (None, "")]

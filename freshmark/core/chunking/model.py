"""The chunk every indexer stores: one syntax unit (or one part of one), with its metadata."""

from __future__ import annotations

from dataclasses import dataclass, field

MODULE_SYMBOL = "<module>"

KINDS = (
    "function",
    "method",
    "class",
    "interface",
    "struct",
    "enum",
    "trait",
    "impl",
    "module",
    "block",
    "window",
)
# Kinds whose chunk summarises members (their bodies are separate chunks, elided here).
CONTAINER_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "impl", "module"})
# Chunks of one function's body, whose ``name = value`` lines assign, not declare.
FUNCTION_KINDS = frozenset({"function", "method"})
# Chunks of module code: a module block and a fallback window (their text is the file's lines).
MODULE_CODE_KINDS = frozenset({"block", "window"})
# Chunks that are not one definition: module code and the outlines.
NOT_ONE_DEFINITION = MODULE_CODE_KINDS | CONTAINER_KINDS


@dataclass
class Chunk:
    """One chunk of a source file.

    Invariants: ``start_line``/``end_line`` are 1-based and inclusive and include the bound doc
    comment and decorators. For function-like kinds, ``block`` and ``window`` the ``text`` is
    the exact source lines ``start_line..end_line``; a part ``n >= 2`` of a split unit carries
    the unit's signature lines in front of its own lines. For container kinds
    (``CONTAINER_KINDS``) the text is the unit's source with member bodies elided: each elided
    body becomes one ``...`` line, and member doc comments are left out. Lines are joined with
    ``\n``; a CRLF file's ``\r`` is not kept.
    """

    symbol: str
    kind: str
    start_line: int
    end_line: int
    text: str
    signature: str
    imports: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    part: int = 0
    doc: str = ""

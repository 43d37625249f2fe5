"""What a search may ask for: bounds and validation of the query, k and file kinds."""

from __future__ import annotations

from collections.abc import Iterable

from freshmark.core.errors import BadInput
from freshmark.core.kinds import EXCLUDED_FILE_KINDS, FILE_KINDS, ON_REQUEST_FILE_KINDS

# An issue report with its tracebacks and reproduction code is a fair query (tens of KB); a
# pasted file beyond this is refused with a message rather than tokenised and embedded.
MAX_QUERY_BYTES = 100_000
MAX_K = 100

CHANNELS = ("bm25", "vectors", "hybrid")
# What a search covers unless the caller names kinds: everything but the excluded kinds and
# the kinds searched only on request (changelogs, translation catalogues).
DEFAULT_KINDS = frozenset(FILE_KINDS) - EXCLUDED_FILE_KINDS - ON_REQUEST_FILE_KINDS


def validate_query(query: object) -> str:
    """The query stripped of outer whitespace, or ``BadInput`` saying what is wrong with it."""
    if not isinstance(query, str):
        raise BadInput(f"query must be text, not {type(query).__name__}")
    if "\x00" in query:
        raise BadInput("query contains NUL bytes (binary content); send plain text")
    size_bytes = len(query.encode("utf-8", "surrogatepass"))
    if size_bytes > MAX_QUERY_BYTES:
        raise BadInput(
            f"query is {size_bytes} bytes, over the {MAX_QUERY_BYTES}-byte limit; "
            "ask with a sentence or a few symbol names instead of pasting code"
        )
    text = query.strip()
    if not text:
        raise BadInput("query is empty; give words or a symbol name to search for")
    return text


def validate_k(k: object) -> int:
    """``k`` itself, or ``BadInput`` unless it is a whole number from 1 to MAX_K."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise BadInput(f"k must be a whole number from 1 to {MAX_K}, not {k!r}")
    return k


def resolve_kinds(kinds: Iterable[str] | str | None, include_excluded: bool = False
                  ) -> frozenset[str]:
    """The file kinds a search covers: ``kinds`` as named (a list or a comma-separated string),
    else ``DEFAULT_KINDS``; ``include_excluded`` adds the excluded kinds either way."""
    if kinds is None or kinds == "" or kinds == []:
        chosen = set(DEFAULT_KINDS)
    else:
        names = kinds.split(",") if isinstance(kinds, str) else list(kinds)
        if not all(isinstance(name, str) for name in names):
            raise BadInput("kind must be a list of file kind names")
        chosen = {name.strip().lower() for name in names if name.strip()}
        unknown = sorted(chosen - set(FILE_KINDS))
        if unknown:
            raise BadInput(f"unknown file kind {', '.join(map(repr, unknown))}; "
                           f"choose from {', '.join(FILE_KINDS)}")
    if include_excluded:
        chosen |= EXCLUDED_FILE_KINDS
    return frozenset(chosen)

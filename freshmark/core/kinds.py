"""File kinds: what a file is (SPEC §4), and which kinds a search leaves out."""

from __future__ import annotations

FILE_KINDS = (
    "source", "test", "generated", "vendored", "backup", "fixture", "doc", "config",
    "changelog", "translation", "other",
)
# Indexed and labelled, but never handed to a prompt by default (SPEC §4).
EXCLUDED_FILE_KINDS = frozenset({"generated", "vendored", "backup", "fixture"})
# True and citable, but searched only when asked for by kind: release notes and translation
# catalogues mention every symbol and answer almost no question about the code.
ON_REQUEST_FILE_KINDS = frozenset({"changelog", "translation"})

# Each kind's code in the lexical indexes on disk, where it is stored per chunk and per file.
# Fixed, not positions in FILE_KINDS: a new kind takes the next free code, a code is never
# reused or renumbered (an index records this table and is rebuilt if it differs).
KIND_CODES: dict[str, int] = {
    "source": 0, "test": 1, "generated": 2, "vendored": 3, "backup": 4, "fixture": 5, "doc": 6,
    "config": 7, "changelog": 8, "translation": 9, "other": 10,
}

# Where code shows the implementation in use rather than being it.
_SECONDARY_DIRS = frozenset({"examples", "example", "_examples", "_example", "docs", "doc"})
_SECONDARY_KINDS = frozenset({"test", "doc"})


def is_secondary(path: str, file_kind: str = "source") -> bool:
    """Tests, examples and docs: evidence of use, to come after the implementation."""
    return file_kind in _SECONDARY_KINDS or any(part in _SECONDARY_DIRS
                                                for part in path.split("/")[:-1])

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

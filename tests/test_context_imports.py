"""Trimming an import block to what a symbol uses (pure)."""

from __future__ import annotations

from freshmark.services.context.imports import used_import_lines

BLOCK = [
    "import os",
    "import typing as t",
    "from .types import (",
    "    Choice,",
    "    Path,",
    ")",
    "import collections.abc",
]


def test_used_imports_keep_aliases_and_whole_parenthesised_statements():
    kept = used_import_lines(BLOCK, 3, "def f(x: t.Any) -> Path:\n    return collections.abc")
    assert [number for number, _ in kept] == [4, 5, 6, 7, 8, 9]


def test_unused_imports_are_dropped():
    assert used_import_lines(BLOCK, 1, "def f():\n    return os.environ") == [(1, "import os")]

"""Tests written inside a source file: Rust's ``#[cfg(test)] mod tests { … }`` and its
``#[test]`` functions. The file is source; these chunks are tests, ranked and filtered as
tests and left out of the symbol graph (fd's ``tests.is_within_*`` were listed as callers)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from freshmark.core.chunking.model import Chunk

# An attribute line before ``mod``/``fn`` marking it as test code only.
_TEST_ATTRIBUTE = re.compile(r"^\s*#\[(?:cfg\(test\)|(?:\w+::)*test)\]\s*$", re.MULTILINE)
_HEADER = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:mod|fn)\b", re.MULTILINE)


def inline_test_spans(language: str, chunks: Sequence[Chunk]) -> list[tuple[int, int]]:
    """The line spans of ``chunks`` that are test code by their attributes (Rust only)."""
    if language != "rust":
        return []
    return [(chunk.start_line, chunk.end_line) for chunk in chunks
            if chunk.kind in ("module", "function") and _marked(chunk.text)]


def _marked(text: str) -> bool:
    header = _HEADER.search(text)
    return header is not None and _TEST_ATTRIBUTE.search(text, 0, header.start()) is not None

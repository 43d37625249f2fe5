"""A second pass inside the files an issue report reaches (issue 17).

An issue report finds the file at fault far more often than the function: on SWE-bench
reports the right file is in the top 5 for over 90 %, but its changed function often is not
among the file's first two chunks of the answer, or not among the candidates at all (the
channels rank the whole index, and the file's other chunks that matched the report's words
crowd it out). The report itself often says which function: it calls it in its example
(``xr.where(cond, x, y)``), or a traceback frame in that file ran it. So, for a long query,
the best few files of the ranking get a second look at every definition they hold: where the
file's best chunk stood, the ones a traceback frame ran come first, then the best chunk, then
the ones the report's code calls (those already among the candidates before those that join
from the file, the most similar to the report first); the rest keep their order.

Files keep their order (the file answer is untouched) and the ranking stays one ranking of
one pool (the top k for any k is its first k): the pool is the candidates plus the named
definitions of the best files, both fixed by the query, not by k.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from freshmark.core.chunking.model import NOT_ONE_DEFINITION
from freshmark.core.query import path_hint_match

T = TypeVar("T")

# Files of the ranking, best first, whose definitions get the second pass. The file a fix
# touches is first for about half of the reports and in the top 3 for most of the rest.
SECOND_PASS_FILES = 2

# ``name(`` in the report: a call its example makes (``xr.where(...)``, ``ds.swap_dims(``).
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
# Words that look like calls in prose and in reprs but name no definition to look at.
_NOT_CALLS = frozenset({
    "print", "len", "range", "list", "dict", "set", "tuple", "str", "int", "float", "bool",
    "type", "isinstance", "super", "open", "array", "zeros", "ones", "arange", "linspace",
    "if", "for", "while", "return", "and", "or", "not", "in", "is", "with", "e", "i", "g",
})




# A chunk's place in its file after the second pass, first to last: what a traceback frame
# ran (the error came from there; the deepest frame first, ``ran_lead``), the file's best
# chunk, what the report's code calls (often the entry point the user called, with the fault
# deeper: it joins the best chunk rather than displacing it), then the rest in their order.
RAN, BEST, CALLED, UNNAMED = 0, 1, 2, 3


def ran_lead(place: int) -> float:
    """The lead of a chunk that the frame ``place`` frames above the deepest ran: ``RAN`` for
    the deepest (where the error was raised), later for each frame that called down to it,
    always before the file's best chunk (``BEST``)."""
    return RAN + place / (place + 1)


@dataclass(frozen=True)
class ReportNames:
    """What a report says about definitions: the names its code calls, and the (path hint,
    function) of every traceback frame."""

    called: frozenset[str]
    frames: tuple[tuple[str, str], ...]

    def names(self, path: str, symbol: str, chunk_kind: str) -> bool:
        """Whether the report calls this definition or shows a frame of it running."""
        return self.lead(path, symbol, chunk_kind) < UNNAMED

    def lead(self, path: str, symbol: str, chunk_kind: str) -> float:
        """Where the report puts this definition in its file: ``ran_lead`` of the deepest
        traceback frame of this file (the file itself, not a module it may be inside) that ran
        it (a ``Class.method`` symbol is named by ``method``), ``CALLED`` when the report's
        code calls it, else ``UNNAMED``; an outline or a block is never named."""
        name = symbol.rpartition(".")[2]
        # A call of a class names its constructor, not the outline; blocks have no name.
        if chunk_kind in NOT_ONE_DEFINITION or not name or name.startswith("<"):
            return UNNAMED
        # ``frames`` are in the order of their last appearance, the deepest last.
        for place, (hint, function) in enumerate(reversed(self.frames)):
            if function == name and path_hint_match(path, [hint], inside=False):
                return ran_lead(place)
        return CALLED if name in self.called else UNNAMED


def report_names(text: str, frames: Sequence[tuple[str, str]]) -> ReportNames:
    """The names ``text`` calls (``name(``; builtins and keywords left out) and its traceback
    ``frames`` (``query.traceback_frames``)."""
    called = {m.group(1) for m in _CALL.finditer(text)}
    return ReportNames(frozenset(called - _NOT_CALLS), tuple(frames))


# The order of a best file's own chunks before its head is built: a linear score over the
# rerank's features, round values near the weights a logistic regression fitted on the chunks
# of the changed files against their files' other chunks, each repository held out in turn
# (seaborn, xarray, astropy; bench/tune_second_pass.py --fit). Inside one file, the file-wide
# features are equal and drop out; the symbol name, BM25 and the channels' agreement tell
# the changed function from its neighbours, and a class outline or module block is not it.
IN_FILE_WEIGHTS = {"rrf_norm": 1.2, "bm25_norm": 1.0, "symbol_hit": 1.2, "length_fit": 0.4,
                   "substance": 0.4, "named": 1.0, "container": -0.8}


def in_file_score(features: Mapping[str, float]) -> float:
    """A chunk's score within its file (``IN_FILE_WEIGHTS``; a missing feature counts 0)."""
    return sum(weight * features.get(name, 0.0) for name, weight in IN_FILE_WEIGHTS.items())


def in_file_order(ranked: Sequence[T], files: Sequence[str], path_of: Callable[[T], str],
                  score_of: Callable[[T], float]) -> list[T]:
    """``ranked`` with the chunks of each of ``files`` re-ordered among their own places by
    ``score_of`` (best first; ties keep their order); other chunks keep their places."""
    out = list(ranked)
    for path in files:
        slots = [i for i, item in enumerate(ranked) if path_of(item) == path]
        order = sorted((ranked[i] for i in slots), key=lambda item: -score_of(item))
        for slot, item in zip(slots, order, strict=True):
            out[slot] = item
    return out


def best_files(paths_in_order: Sequence[str], n: int = SECOND_PASS_FILES) -> list[str]:
    """The first ``n`` distinct paths of a ranking's paths (best first)."""
    return list(dict.fromkeys(paths_in_order))[:n]


def second_pass(
    ranked: Sequence[T],
    joining: Sequence[T],
    files: Sequence[str],
    path_of: Callable[[T], str],
    lead: Callable[[T], float],
) -> list[T]:
    """``ranked`` with each of ``files`` led by what the report names in it.

    A file's head is its chunks that a frame ran (``RAN``, the deepest frame's first), then
    its best chunk, then the ones the report's code calls (``CALLED``); it takes the place of
    the file's best chunk, the named chunks leaving their own places. ``joining``: definitions
    of those files that are not in ``ranked``, best first (the caller orders them, e.g. by
    similarity to the report); only named ones join, after the file's own chunks of the same
    lead. Every other chunk keeps its order.
    """
    wanted = set(files)
    own: dict[str, list[T]] = {}
    for item in ranked:
        if path_of(item) in wanted:
            own.setdefault(path_of(item), []).append(item)
    heads: dict[str, list[T]] = {}
    moved: set[int] = set()
    for path, items in own.items():
        leads = [(BEST if n == 0 and lead(item) > BEST else lead(item), item)
                 for n, item in enumerate(items)]
        leads += [(lead(item), item) for item in joining
                  if path_of(item) == path and lead(item) < UNNAMED]
        head = [item for level, item in sorted(leads, key=lambda li: li[0]) if level < UNNAMED]
        heads[path] = head
        moved.update(id(item) for item in head)
    out: list[T] = []
    for item in ranked:
        path = path_of(item)
        if path in heads:
            out += heads.pop(path)
        elif id(item) not in moved:
            out.append(item)
    return out

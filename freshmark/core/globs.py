"""Path globs, in two dialects, matched in time linear in the path (no backtracking).

Both dialects share ``*`` (any run of characters within one path segment), ``?`` (one
character within a segment) and literal characters:

- **config globs** (``wildmatch=False``), used by ``[[layers]] globs`` and ``[classify]`` in
  ``config``, by the built-in rules of ``classify`` and by the CLI: ``**`` anywhere spans
  directories (``**/`` also matches no directory at all); no brackets or escapes.
  ``glob_match`` adds that a bare pattern (no ``/``, no ``**``) matches the file name at any
  depth, by ``fnmatch``.
- **git wildmatch** (``wildmatch=True``, pathname mode), used by ``gitattributes``: ``**`` is
  special only as a whole segment (elsewhere it is two ``*``), ``[...]`` is a character class
  (``[!...]`` / ``[^...]`` negated; no class matches ``/``; a reversed range ``[z-a]`` is
  its first character, as git reads it), and ``\\`` escapes the next character. A class left
  open is an ``InvalidGlob``: git's wildmatch matches nothing with it; callers report and
  drop such a pattern.

A ``Glob`` is hand-written rather than translated to a regular expression: Python's ``re``
backtracks, so ``*a*a*a*a*a*a*a*a*b`` against a long name of ``a``s costs time exponential in
the stars (seconds to minutes per file), and no library on hand (``fnmatch``, ``pathspec``,
``wcmatch``) matches git's wildmatch without compiling to ``re``. The pattern is compiled to
a small automaton whose state is the set of pattern positions still alive, as in git's own
``wildmatch.c`` bound of O(path x pattern); the set transitions are cached per pattern, so a
repeated glob costs one dictionary look-up per path character.

``glob_regex_text`` remains for the fixed built-in rules of ``classify``, which are unioned into
one regular expression for speed; nothing a user writes is compiled by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache

_LITERAL, _ONE, _CLASS, _STAR, _ANY_STAR, _SPLIT = range(6)
_SLASH = "/"
_CACHED_TRANSITIONS_MAX = 4096


class InvalidGlob(ValueError):
    """A pattern no path can match as written (an unclosed ``[``)."""


@dataclass(frozen=True)
class _Step:
    kind: int
    char: str = ""  # _LITERAL
    ranges: tuple[tuple[str, str], ...] = ()  # _CLASS, inclusive
    negated: bool = False  # _CLASS
    skip: int = 0  # _SPLIT: also go on this many steps ahead without reading

    def reads(self, char: str) -> bool:
        """Whether this step consumes ``char`` (``_STAR`` and ``_ANY_STAR`` stay put)."""
        if self.kind == _LITERAL:
            return char == self.char
        if self.kind == _ANY_STAR:
            return True
        if self.kind == _CLASS:
            inside = any(lo <= char <= hi for lo, hi in self.ranges)
            return char != _SLASH and inside != self.negated
        return self.kind in (_ONE, _STAR) and char != _SLASH


def _dirs() -> list[_Step]:
    """``(?:.*/)?``: nothing, or any run of characters ending in ``/`` (whole directories)."""
    return [_Step(_SPLIT, skip=3), _Step(_ANY_STAR), _Step(_LITERAL, _SLASH)]


def _config_steps(pattern: str, i: int) -> tuple[list[_Step], int]:
    if pattern.startswith("**/", i):
        return _dirs(), i + 3
    if pattern.startswith("**", i):
        return [_Step(_ANY_STAR)], i + 2
    return _common_step(pattern, i)


def _common_step(pattern: str, i: int) -> tuple[list[_Step], int]:
    char = pattern[i]
    if char == "*":
        return [_Step(_STAR)], i + 1
    if char == "?":
        return [_Step(_ONE)], i + 1
    return [_Step(_LITERAL, char)], i + 1


def _class_char(pattern: str, j: int) -> tuple[str, int]:
    if pattern[j] == "\\" and j + 1 < len(pattern):
        return pattern[j + 1], j + 2
    return pattern[j], j + 1


def _bracket(pattern: str, i: int) -> tuple[list[_Step], int]:
    """``[...]`` as git reads it: a ``]`` first in the class is a member; ``\\`` escapes."""
    j = i + 1
    negated = j < len(pattern) and pattern[j] in "!^"
    j += negated
    ranges: list[tuple[str, str]] = []
    while j < len(pattern):
        if pattern[j] == "]" and ranges:
            return [_Step(_CLASS, ranges=tuple(ranges), negated=negated)], j + 1
        low, j = _class_char(pattern, j)
        high = low
        if j + 1 < len(pattern) and pattern[j] == "-" and pattern[j + 1] != "]":
            high, j = _class_char(pattern, j + 1)
            high = max(low, high)  # git compares the first end alone: [z-a] is [z]
        ranges.append((low, high))
    raise InvalidGlob(f"unclosed [ in {pattern!r}")


def _wildmatch_steps(pattern: str, i: int) -> tuple[list[_Step], int]:
    if pattern.startswith("**", i):
        end = i + 2
        at_segment_start = i == 0 or pattern[i - 1] == _SLASH
        if at_segment_start and end == len(pattern):
            return [_Step(_ANY_STAR)], end
        if at_segment_start and pattern[end] == _SLASH:
            return _dirs(), end + 1
        return [_Step(_STAR), _Step(_STAR)], end
    if pattern[i] == "[":
        return _bracket(pattern, i)
    if pattern[i] == "\\" and i + 1 < len(pattern):
        return [_Step(_LITERAL, pattern[i + 1])], i + 2
    return _common_step(pattern, i)


@dataclass
class Glob:
    """One compiled pattern; ``matches(path)`` tests the whole path."""

    pattern: str
    steps: tuple[_Step, ...]
    _closures: tuple[int, ...] = field(init=False, repr=False)
    _transitions: dict[tuple[int, str], int] = field(init=False, repr=False,
                                                       default_factory=dict)

    def __post_init__(self) -> None:
        self._closures = tuple(self._closure_of(i) for i in range(len(self.steps) + 1))

    def _closure_of(self, start: int) -> int:
        """Bit set of the positions reachable from ``start`` without reading a character."""
        reached, todo = 0, [start]
        while todo:
            at = todo.pop()
            if reached >> at & 1:
                continue
            reached |= 1 << at
            step = self.steps[at] if at < len(self.steps) else None
            if step is not None and step.kind in (_STAR, _ANY_STAR):
                todo.append(at + 1)
            elif step is not None and step.kind == _SPLIT:
                todo.extend((at + 1, at + step.skip))
        return reached

    def _advance(self, alive: int, char: str) -> int:
        after, at = 0, 0
        while alive >> at:
            if alive >> at & 1 and at < len(self.steps) and self.steps[at].reads(char):
                stays = self.steps[at].kind in (_STAR, _ANY_STAR)
                after |= self._closures[at if stays else at + 1]
            at += 1
        return after

    def matches(self, path: str) -> bool:
        alive = self._closures[0]
        transitions = self._transitions
        for char in path:
            key = (alive, char)
            after = transitions.get(key)
            if after is None:
                after = self._advance(alive, char)
                if len(transitions) >= _CACHED_TRANSITIONS_MAX:
                    transitions.clear()
                transitions[key] = after
            if not after:
                return False
            alive = after
        return bool(alive >> len(self.steps) & 1)


@lru_cache(maxsize=4096)
def compile_glob(pattern: str, *, wildmatch: bool = False) -> Glob:
    """The pattern compiled (and cached); ``InvalidGlob`` for one that can match nothing."""
    steps: list[_Step] = []
    i = 0
    while i < len(pattern):
        more, i = _wildmatch_steps(pattern, i) if wildmatch else _config_steps(pattern, i)
        steps.extend(more)
    return Glob(pattern, tuple(steps))


def glob_match(path: str, glob: str) -> bool:
    """True if a repo-relative POSIX path matches a config glob (``**`` crosses directories)."""
    if "/" not in glob and "**" not in glob:
        # A bare pattern like "*.bak" matches the file name at any depth. fnmatch's regular
        # expressions do not backtrack across stars (since Python 3.9).
        return fnmatchcase(path.rsplit("/", 1)[-1], glob)
    return compile_glob(glob).matches(path)


_WITHIN_SEGMENT = {"*": "[^/]*", "?": "[^/]"}


def glob_regex_text(pattern: str) -> str:
    """Regex text of a config glob for a whole path (use ``fullmatch``); unanchored, so the
    built-in rules can be combined into one expression."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append(_WITHIN_SEGMENT.get(pattern[i]) or re.escape(pattern[i]))
            i += 1
    return "".join(out)

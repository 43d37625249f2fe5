"""Path globs: the one translator from a glob to a regular expression, in two dialects.

Both dialects share ``*`` (any run of characters within one path segment), ``?`` (one
character within a segment) and literal characters (escaped):

- **config globs** (``wildmatch=False``), used by ``[[layers]] globs`` and ``[classify]`` in
  ``config``, by the built-in rules of ``classify`` and by the CLI: ``**`` anywhere spans
  directories (``**/`` also matches no directory at all); no brackets or escapes.
  ``glob_match`` adds that a bare pattern (no ``/``, no ``**``) matches the file name at any
  depth, by ``fnmatch``.
- **git wildmatch** (``wildmatch=True``, pathname mode), used by ``gitattributes``: ``**`` is
  special only as a whole segment (elsewhere it is two ``*``), ``[...]`` is a character class
  (``[!...]`` / ``[^...]`` negated, never matching ``/``), and ``\\`` escapes the next character.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache

_WITHIN_SEGMENT = {"*": "[^/]*", "?": "[^/]"}
_Token = tuple[str, int]  # regex text of one pattern token, and the index after it


def _spanning_double_star(pattern: str, i: int) -> _Token | None:
    """Config ``**``: any characters, ``/`` included; ``**/`` may also stand for nothing."""
    if pattern.startswith("**/", i):
        return "(?:.*/)?", i + 3
    if pattern.startswith("**", i):
        return ".*", i + 2
    return None


def _segment_double_star(pattern: str, i: int) -> _Token | None:
    """Wildmatch ``**``: only a whole segment (``**``, ``**/x``, ``x/**/y``, ``x/**``)."""
    if not pattern.startswith("**", i):
        return None
    end = i + 2
    at_segment_start = i == 0 or pattern[i - 1] == "/"
    at_segment_end = end == len(pattern) or pattern[end] == "/"
    if not (at_segment_start and at_segment_end):
        return None
    if end == len(pattern):
        return ".*", end
    return "(?:[^/]*/)*", end + 1


def _bracket(pattern: str, i: int) -> _Token | None:
    """Wildmatch ``[...]``; a ``]`` right after ``[`` belongs to the class, as in git."""
    if pattern[i] != "[" or "]" not in pattern[i + 2 :]:
        return None
    end = pattern.index("]", i + 2)
    body = pattern[i + 1 : end].replace("\\", "\\\\")
    if body[:1] in ("!", "^"):
        return "[^/" + body[1:] + "]", end + 1
    return "[" + body + "]", end + 1


def _escaped(pattern: str, i: int) -> _Token | None:
    """Wildmatch ``\\x``: ``x`` literally; a trailing backslash stays a literal backslash."""
    if pattern[i] == "\\" and i + 1 < len(pattern):
        return re.escape(pattern[i + 1]), i + 2
    return None


def _dialect_token(pattern: str, i: int, wildmatch: bool) -> _Token | None:
    """The token at ``i`` if it is one only the chosen dialect knows, else None."""
    if not wildmatch:
        return _spanning_double_star(pattern, i)
    return _segment_double_star(pattern, i) or _bracket(pattern, i) or _escaped(pattern, i)


def glob_regex_text(pattern: str, *, wildmatch: bool = False) -> str:
    """Regex text for a whole path (use ``fullmatch``); unanchored, so callers can combine."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        token = _dialect_token(pattern, i, wildmatch)
        if token is None:
            char = pattern[i]
            token = (_WITHIN_SEGMENT.get(char) or re.escape(char), i + 1)
        text, i = token
        out.append(text)
    return "".join(out)


@lru_cache(maxsize=4096)
def glob_regex(pattern: str, *, wildmatch: bool = False) -> re.Pattern[str]:
    """``glob_regex_text`` compiled (and cached), for ``fullmatch``."""
    return re.compile(glob_regex_text(pattern, wildmatch=wildmatch))


@lru_cache(maxsize=4096)
def _anchored_glob_regex(glob: str) -> re.Pattern[str]:
    # "^...$" with ``match``, as glob_match has always done: "$" also accepts a final newline.
    return re.compile("^" + glob_regex_text(glob) + "$")


def glob_match(path: str, glob: str) -> bool:
    """True if a repo-relative POSIX path matches a config glob (``**`` crosses directories)."""
    if "/" not in glob and "**" not in glob:
        # A bare pattern like "*.bak" matches the file name at any depth.
        return fnmatchcase(path.rsplit("/", 1)[-1], glob)
    return bool(_anchored_glob_regex(glob).match(path))

"""What a context slice showed, as ``check-answer`` reads it from the context's JSON: the
lines of each file an answer may cite (``core/answers.py`` judges the answer against them).

A section shows its numbered body (and its anchor); a trimmed section (imports) the lines it
numbers itself; a signature the lines it is written on, and its definition cited as a whole
by its name, exactly as anchored (never some lines of its body, which was not shown); an
outline its own definition, cited by its name (a member's body an outline elided was not
shown); a pointer with no text nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.core.errors import BadInput

_NUMBERED_LINE = re.compile(r"^ {0,6}(\d{1,7})  ", re.M)  # a line a section numbers itself


def short_name(symbol: str) -> str:
    """``Flask.make_response`` -> ``make_response``; ``a::b()`` -> ``b``."""
    name = symbol.strip().removesuffix("()")
    return re.split(r"\.|::|#", name)[-1]


@dataclass(frozen=True)
class ServedSpan:
    """Lines of one file that a section of the slice put in front of the model; ``by_name``:
    only its definition as a whole was (a signature, an outline with its member bodies
    elided), so only a reference naming it (``symbol``) may cite lines of it; ``whole``:
    only all of them at once (a signature's definition, whose body was not shown)."""

    path: str
    first_line: int
    last_line: int
    symbol: str
    role: str
    by_name: bool = False
    whole: bool = False

    def holds(self, path: str, start: int, end: int, symbol: str = "") -> bool:
        if self.by_name and short_name(symbol) != short_name(self.symbol):
            return False
        if self.whole:
            return (self.path, self.first_line, self.last_line) == (path, start, end)
        return self.path == path and self.first_line <= start and end <= self.last_line


@dataclass(frozen=True)
class ServedSlice:
    """The slice an answer was written from: its level, target and the spans it showed."""

    level: str
    branch: str
    worktree: bool
    repo: str
    spans: tuple[ServedSpan, ...]

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> ServedSlice:
        """Read from ``freshmark context --json`` (or the HTTP/MCP context answer)."""
        if not isinstance(context, Mapping) or not isinstance(context.get("sections"), list):
            raise BadInput("the context is not a context slice: it has no 'sections' list "
                           "(save it with `freshmark context … --json`)")
        target = _mapping(context.get("target"))
        index = _mapping(context.get("index"))
        spans = []
        for number, section in enumerate(context["sections"], 1):
            spans.extend(_spans_of(section, number))
        return cls(str(context.get("level") or "L1").upper(), str(target.get("branch") or ""),
                   bool(target.get("worktree")), str(index.get("repo") or ""), tuple(spans))

    @property
    def evidence_path(self) -> str | None:
        """The file an L1 answer's path-less references are about: its first evidence."""
        for span in self.spans:
            if span.role in ("evidence", "match"):
                return span.path
        return self.spans[0].path if self.spans else None

    def holds(self, path: str, start: int, end: int, symbol: str = "") -> bool:
        return any(span.holds(path, start, end, symbol) for span in self.spans)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _spans_of(section: Any, number: int) -> list[ServedSpan]:
    """What a section showed: its numbered lines (with its anchor); a signature's lines (its
    shown lines short of its anchor), with its anchor as a whole cited by its own name; the
    lines its text numbers itself (trimmed imports); else, when it has text, its anchor cited
    by its own name (an outline), as a whole (a signature of an older context, which does not
    say its lines); a pointer with no text shows nothing."""
    if not isinstance(section, Mapping):
        raise BadInput(f"section {number} of the context is not an object")
    try:
        path, symbol = str(section["path"]), str(section.get("symbol") or "")
        role = str(section.get("role") or "")
        start_line, end_line = int(section["start_line"]), int(section["end_line"])
        shown_start = section.get("shown_start")
        shown_end = section.get("shown_end")
        text = str(section.get("text") or "")
        note = str(section.get("note") or "")
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"section {number} of the context has no usable path and lines") \
            from exc
    if isinstance(shown_start, int) and isinstance(shown_end, int) and shown_start > 0:
        shown = ServedSpan(path, shown_start, shown_end, symbol, role)
        if shown_start <= start_line and end_line <= shown_end:
            return [ServedSpan(path, start_line, end_line, symbol, role), shown]
        return [shown, ServedSpan(path, start_line, end_line, symbol, role, by_name=True,
                                  whole=True)]
    numbered = [int(m.group(1)) for m in _NUMBERED_LINE.finditer(text)]
    if numbered:
        return [ServedSpan(path, first, last, symbol, role) for first, last in _runs(numbered)]
    if not text.strip():
        return []
    return [ServedSpan(path, start_line, end_line, symbol, role, by_name=True,
                       whole="(signature only)" in note)]


def _runs(lines: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive line numbers as (first, last) runs: ``15 16 18`` -> (15, 16), (18, 18)."""
    runs: list[tuple[int, int]] = []
    for line in sorted(set(lines)):
        if runs and line == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], line)
        else:
            runs.append((line, line))
    return runs

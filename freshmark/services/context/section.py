"""A section of a context slice: one anchored piece of code (or a pointer to it) with its
citation, as a slice serves it and an answer may cite it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from freshmark.core.citation import Citation


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes in a prompt: one per 3 ASCII characters, one per other character
    (``build``'s estimate; never negative)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 3) + (len(text) - ascii_chars)


@dataclass(frozen=True)
class NotShown:
    """Definitions a section's note names as not in the slice: the other types the evidence
    uses, past those shown at its boundary. Sections packed after the note is written (the
    module, the call graph's symbols) may show them, so ``fit`` narrows it to the final slice."""

    user: str
    places: tuple[tuple[str, str, int, int], ...]  # path, symbol, start line, end line

    def text(self) -> str:
        if not self.places:
            return ""
        return (f"; other types {self.user} uses, not shown: "
                f"{', '.join(symbol for _, symbol, _, _ in self.places)}")


@dataclass
class Section:
    """One anchored piece of the slice; ``body`` is code, numbered from ``body_start``."""

    role: str
    path: str
    symbol: str
    start_line: int
    end_line: int
    confidence: str
    citation: Citation | None
    body: str = ""
    body_start: int = 0  # 0: body is not numbered (signatures, call chains)
    verdict: str | None = None
    note: str = ""
    language: str = ""
    fallback: Section | None = None
    # A pointer's: the code it stands for, to say what showing it would take ("": none).
    stands_for: str = ""
    # A signature's: the lines it is written on (its body is the signature on one line).
    signature_lines: tuple[int, int] | None = None
    # What the end of ``note`` names as not in the slice.
    not_shown: NotShown | None = None

    @property
    def shown_end(self) -> int:
        """Last line the body shows (past ``end_line`` when it carries breathing room)."""
        if self.body and self.body_start:
            return self.body_start + len(self.body.splitlines()) - 1
        return self.end_line

    def smallest(self) -> Section:
        """The last of its fallbacks (itself when it has none): the smallest form it has."""
        form = self
        while form.fallback is not None:
            form = form.fallback
        return form

    def name_only_not_shown(self, shown: Callable[[str, str, int, int], bool]) -> None:
        """Drop from the note the definitions ``shown`` (path, symbol, lines) says are shown."""
        if self.not_shown is None:
            return
        said = self.not_shown.text()
        self.not_shown = NotShown(self.not_shown.user, tuple(
            place for place in self.not_shown.places if not shown(*place)))
        self.note = self.note.replace(said, self.not_shown.text())

    def covers(self, path: str, start: int, end: int) -> bool:
        """True when this section already shows lines ``start..end`` of ``path``."""
        return self.path == path and bool(self.body_start) and \
            self.body_start <= start and end <= self.shown_end

    @property
    def anchor(self) -> str:
        lines = f"L{self.start_line}-L{self.end_line}"
        return f"[{self.path}:{lines} | {self.symbol} | {self.confidence}]"

    @property
    def standing(self) -> str:
        """Its confidence and role, and how the graph knows a caller (``medium | caller (name
        match only)``): what a ``[LEFT OUT]`` line says of it, as its anchor and note do."""
        graph = next((f" ({known})" for known in ("graph-confirmed", "name match only")
                      if f"({known}" in self.note), "")
        return f"{self.confidence} | {self.role}{graph}"

    def render(self) -> str:
        lines = [self.anchor + (f"  {self.note}" if self.note else "")]
        if self.citation is not None:
            lines.extend(self.citation.lines())
        if self.body:
            lines.append(f"```{self.language}")
            lines.extend(_numbered(self.body, self.body_start))
            lines.append("```")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role, "path": self.path, "symbol": self.symbol,
            "start_line": self.start_line, "end_line": self.end_line,
            "confidence": self.confidence, "verdict": self.verdict, "anchor": self.anchor,
            "note": self.note, "citation": self.citation.text() if self.citation else None,
            "text": self.body,
            # The lines the body shows (breathing room included; a signature's own lines):
            # what an answer may cite.
            "shown_start": self.body_start or (self.signature_lines or (None, None))[0],
            "shown_end": self.shown_end if self.body_start
            else (self.signature_lines or (None, None))[1],
        }


def shows(sections: list[Section], path: str, symbol: str, start: int, end: int) -> bool:
    """Whether one of ``sections`` is the definition (same symbol, lines that overlap: another
    overload is another definition) or shows its lines (e.g. in its breathing room)."""
    return any((s.path, s.symbol) == (path, symbol) and s.start_line <= end
               and start <= s.end_line or s.covers(path, start, end) for s in sections)


def shown_caller_pointer(sections: list[Section], caller: Section) -> Section | None:
    """A line naming ``caller`` whose lines another of ``sections`` shows in its breathing
    room: not repeated, and not lost to whoever reads the callers; None when no section
    shows it, or shows it as part of its own definition (a member of the class shown)."""
    covering = next((s for s in sections
                     if s.covers(caller.path, caller.start_line, caller.end_line)), None)
    if caller.role != "caller" or covering is None or caller.start_line <= covering.end_line:
        return None
    return replace(caller, citation=None, body="", body_start=0, fallback=None,
                   stands_for=caller.body, note=caller.note.replace(" (signature only)", "")
                   + f", its lines shown within {covering.anchor}")


def _numbered(body: str, first: int) -> list[str]:
    if not first:
        return body.splitlines()
    return [f"{first + i:>5}  {line}" for i, line in enumerate(body.splitlines())]

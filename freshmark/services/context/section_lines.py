"""Where a section's lines run: the room after a symbol, and the lines its signature is
written on (pure functions of a file's lines)."""

from __future__ import annotations

import re
from collections.abc import Iterable

BREATHING_LINES = 25


def breathing_end(lines: list[str], end: int, spans: Iterable[tuple[int, int]]) -> int:
    """The last line of the room after a symbol ending on ``end``: up to ``BREATHING_LINES``
    more, ending with the last definition that fits whole (``spans``: today's definitions and
    module blocks), never inside the next one; trailing blank lines left out."""
    last = min(len(lines), end + BREATHING_LINES)
    room = end
    for start, stop in sorted(span for span in spans if span[0] > end):
        if start > last:
            room = last
            break
        if stop > last:  # it does not fit: the room stops above it (and its doc comment)
            room = max(room, start - 1)
            break
        room = max(room, stop)
    else:
        room = last
    while room > end and not lines[room - 1].strip():
        room -= 1
    return room


def signature_lines(lines: list[str], start: int, end: int, signature: str, name: str
                    ) -> tuple[int, int]:
    """The lines of ``start..end`` a signature is written on: its words in order, spaced as
    the source spaces them (its last word may be cut short: ``f(x)`` of ``f(x):``, or a long
    signature's end), a leading word the source leaves out (Go's ``type``) allowed for; else
    the first line naming ``name``, else ``start``."""
    words = [(number, word) for number in range(start, min(end, len(lines)) + 1)
             for word in lines[number - 1].split()]
    for wanted in (signature.split(), signature.split()[1:]):
        size = len(wanted)
        for i in range(len(words) - size + 1):
            found = [word for _, word in words[i : i + size]]
            if size and found[:-1] == wanted[:-1] and found[-1].startswith(wanted[-1]):
                return words[i][0], words[i + size - 1][0]
    naming = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)") if name else None
    return next(((number, number) for number in range(start, min(end, len(lines)) + 1)
                 if naming and naming.search(lines[number - 1])), (start, start))


def calling_line(lines: list[str], start: int, end: int, name: str) -> int | None:
    """The first line of ``start..end`` calling ``name`` (else naming it as a word): where
    module code (a block, a namespace) uses it, which its first line (a licence, ``namespace
    x {``) does not show, nor does the import naming it."""
    rows = range(start, min(end, len(lines)) + 1)
    word = rf"(?<!\w){re.escape(name)}(?!\w)"
    for pattern in (re.compile(word + r"\s*[(<{]"), re.compile(word)):
        found = next((number for number in rows if pattern.search(lines[number - 1])), None)
        if found is not None:
            return found
    return None

"""Line windows for text freshmark cannot parse (plain text, config, docs, unknown languages).

A window closes at the first blank line once it holds ``3/4`` of the target, or hard at
``5/4`` of it. Because the cuts snap to blank lines, an edit moves only the windows around it:
the cuts after it land on the same blank lines again, so later windows keep their text.
"""

from __future__ import annotations

from freshmark.core.chunking.model import MODULE_SYMBOL, Chunk

WINDOW_LINES = 60
_SIGNATURE_MAX_CHARS = 120


def window_bounds(lines: list[str], window_lines: int = WINDOW_LINES) -> list[tuple[int, int]]:
    """0-based inclusive row ranges of the windows; blank rows at window edges are left out."""
    soft = max(1, window_lines * 3 // 4)
    hard = max(soft, window_lines * 5 // 4)
    bounds: list[tuple[int, int]] = []
    start: int | None = None
    for row, line in enumerate(lines):
        blank = not line.strip()
        if start is None:
            if not blank:
                start = row
            continue
        length = row - start + 1
        if (blank and length > soft) or length >= hard:
            end = row - 1 if blank else row
            bounds.append((start, _last_non_blank(lines, start, end)))
            start = None
    if start is not None:
        bounds.append((start, _last_non_blank(lines, start, len(lines) - 1)))
    return bounds


def _last_non_blank(lines: list[str], start: int, end: int) -> int:
    while end > start and not lines[end].strip():
        end -= 1
    return end


def window_chunks(lines: list[str], window_lines: int = WINDOW_LINES) -> list[Chunk]:
    """The windows as chunks: symbol ``<module>``, kind ``window``, parts numbered from 1
    (part 0 when the whole file is one window)."""
    bounds = window_bounds(lines, window_lines)
    chunks = []
    for number, (start, end) in enumerate(bounds, start=1):
        window = lines[start : end + 1]
        first = next((line for line in window if line.strip()), "")
        chunks.append(
            Chunk(
                symbol=MODULE_SYMBOL,
                kind="window",
                start_line=start + 1,
                end_line=end + 1,
                text="\n".join(window),
                signature=" ".join(first.split())[:_SIGNATURE_MAX_CHARS],
                part=number if len(bounds) > 1 else 0,
            )
        )
    return chunks

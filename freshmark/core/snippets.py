"""Reading what ``verify`` checks: the seed's snippet list, or freshmark's own JSON results.

The format is told by the first non-blank character:

* **TSV** (seed 000 §4.8): ``path<TAB>sha256-prefix-of-the-file`` per line. Blank lines and
  ``#`` comments are skipped. A path with no hash (``path`` or ``path<TAB>``) has no version
  metadata (verdict ``unverifiable``, the seed's 待补). The path is everything before the last
  TAB, as in the seed's script.
* **JSON** (``{`` or ``[``): the output of ``search --json`` (an object with ``results``), an
  array of results, one result object, or JSON Lines (one result or response per line).

Every entry keeps the 1-based input line where it starts. A malformed line becomes an entry
with ``error`` set and parsing goes on, so the rest is still checked. Paths are checked here:
``..``, absolute paths and NUL bytes are refused per line (symlinks are refused when the file
is read, since only the work tree can tell).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from freshmark.core.errors import BadInput, UnsafePath
from freshmark.core.tree import safe_relpath

# A snippet list is a few hundred lines; anything this large is the wrong file.
MAX_INPUT_BYTES = 10 * 1024 * 1024
# A git short sha is 7 hex digits; fewer would match by accident. sha256 has 64.
MIN_HASH_HEX = 7
MAX_HASH_HEX = 64
_HEX = re.compile(r"[0-9a-fA-F]+")
_LINE_FIELDS = ("start_line", "end_line")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class SnippetEntry:
    """One thing to verify: a TSV line (``hash_prefix``) or a JSON result (``stamp``).

    ``error`` is set for an input line that could not be used; ``path`` is then as given.
    """

    line: int
    path: str
    hash_prefix: str | None = None
    stamp: dict[str, Any] | None = None
    error: str | None = None

    @property
    def source_format(self) -> str:
        return "json" if self.stamp is not None else "tsv"


def decode_input(data: bytes) -> str:
    """Input bytes as text; ``BadInput`` for binary, non-UTF-8, oversized or empty input."""
    if len(data) > MAX_INPUT_BYTES:
        raise BadInput(f"input is {len(data)} bytes, over the {MAX_INPUT_BYTES}-byte limit")
    if b"\0" in data:
        raise BadInput("input is binary (NUL bytes), not a snippet list or JSON results")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"input is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "give a path<TAB>hash list or search --json output"
        ) from exc
    return check_text(text)


def check_text(text: str) -> str:
    """``text`` itself if it can be a snippet list; ``BadInput`` for binary, huge or empty."""
    if "\0" in text:
        raise BadInput("input is binary (NUL bytes), not a snippet list or JSON results")
    if len(text) > MAX_INPUT_BYTES:
        raise BadInput(f"input is {len(text)} characters, over the {MAX_INPUT_BYTES} limit")
    if not text.strip():
        raise BadInput("nothing to verify: the input is empty")
    return text


def parse_snippets(text: str) -> list[SnippetEntry]:
    """Entries of a TSV snippet list or of JSON results, in input order."""
    first = text.lstrip()[:1]
    entries = _parse_json(text) if first in ("{", "[") else _parse_tsv(text)
    if not entries:
        raise BadInput("nothing to verify: no snippet lines in the input")
    return entries


def refuse_other_files(entries: list[SnippetEntry], name: str = "input") -> None:
    """``BadInput`` for input (``name``) that is no snippet list at all (a source file given
    to the CLI, say): no line carries a hash or a result, and most are malformed. Reporting
    each of its lines would bury the one thing to say; a list with a few bad lines still has
    them reported. The first line is quoted as it reads, not judged as a list's line: a
    comment's ``/*!`` is no absolute path (express's lib/request.js)."""
    checkable = any(e.error is None and (e.hash_prefix or e.stamp is not None) for e in entries)
    malformed = [e for e in entries if e.error is not None]
    if checkable or len(malformed) * 2 <= len(entries):
        return
    first = malformed[0]
    # A JSON entry has no line of its own to quote: its error says what it lacks.
    reads = f"line {first.line} reads {first.path[:60]!r}" if first.path else \
        f"line {first.line}: {first.error}"
    raise BadInput(
        f"{name} is not a snippet list or search results ({reads}): verify reads "
        "path<TAB>sha256-prefix lines or search --json output; a file's indexed chunks: "
        "freshmark chunks --path FILE")


# -- TSV -------------------------------------------------------------------------------------------
def _parse_tsv(text: str) -> list[SnippetEntry]:
    entries: list[SnippetEntry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        entries.append(_tsv_entry(number, raw))
    return entries


def _tsv_entry(number: int, raw: str) -> SnippetEntry:
    if "\t" in raw:
        path, _, recorded = raw.rpartition("\t")
        path, recorded = path.strip(), recorded.strip()
    else:
        path, recorded = raw.strip(), ""
        if any(ch.isspace() for ch in path):
            return SnippetEntry(number, path, error="expected path<TAB>hash-prefix (no TAB found)")
    if not path:
        return SnippetEntry(number, path, error="no path before the TAB")
    hash_ok = bool(_HEX.fullmatch(recorded)) and MIN_HASH_HEX <= len(recorded) <= MAX_HASH_HEX
    if recorded and not hash_ok:
        return SnippetEntry(
            number, path,
            error=f"hash prefix {recorded[:80]!r} is not {MIN_HASH_HEX}-{MAX_HASH_HEX} hex digits",
        )
    try:
        clean = safe_relpath(path)
    except UnsafePath as exc:
        return SnippetEntry(number, path, error=f"refused: {exc}")
    return SnippetEntry(number, clean, hash_prefix=recorded.lower() or None)


# -- JSON ------------------------------------------------------------------------------------------
def _parse_json(text: str) -> list[SnippetEntry]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        if _first_line_is_json(text):
            return _parse_json_lines(text)
        return _salvage(text, exc)
    return _document_entries(text, document)


def _first_line_is_json(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict | list)
    except json.JSONDecodeError:
        return False


def _parse_json_lines(text: str) -> list[SnippetEntry]:
    entries: list[SnippetEntry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            entries.append(SnippetEntry(number, "", error=f"malformed JSON: {exc.msg} "
                                                          f"(column {exc.colno})"))
            continue
        items = value.get("results") if isinstance(value, dict) and "results" in value else value
        for item in items if isinstance(items, list) else [items]:
            entries.append(_json_entry(number, item))
    return entries


def _salvage(text: str, error: json.JSONDecodeError) -> list[SnippetEntry]:
    """A broken multi-line document: report where it breaks, still check each result that
    decodes on its own (any line opening an object with a ``path``)."""
    entries = [SnippetEntry(error.lineno, "", error=f"malformed JSON: {error.msg} "
                                                    f"(column {error.colno}); results that "
                                                    "can be read are still checked")]
    consumed_until = 0
    for number, offset, raw in _lines_with_offsets(text):
        start = offset + len(raw) - len(raw.lstrip())
        if start < consumed_until or not raw.lstrip().startswith("{"):
            continue
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "path" in value:
            entries.append(_json_entry(number, value))
            consumed_until = end
    return sorted(entries, key=lambda e: e.line)


def _lines_with_offsets(text: str) -> Iterator[tuple[int, int, str]]:
    offset = 0
    for number, raw in enumerate(text.splitlines(keepends=True), start=1):
        yield number, offset, raw.rstrip("\r\n")
        offset += len(raw)


def _document_entries(text: str, document: Any) -> list[SnippetEntry]:
    start = len(text) - len(text.lstrip())
    if isinstance(document, dict) and "results" in document:
        results = document["results"]
        position = _key_value_offset(text, start, "results")
        if not isinstance(results, list):
            return [SnippetEntry(_line_of(text, position), "", error="'results' is not a list")]
        return [_json_entry(_line_of(text, at), item)
                for at, item in zip(_array_item_offsets(text, position), results, strict=True)]
    if isinstance(document, list):
        return [_json_entry(_line_of(text, at), item)
                for at, item in zip(_array_item_offsets(text, start), document, strict=True)]
    return [_json_entry(_line_of(text, start), document)]


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _key_value_offset(text: str, pos: int, wanted: str) -> int:
    """Offset of the value of top-level key ``wanted`` in the valid JSON object at ``pos``."""
    pos = _skip_space(text, pos + 1)
    while pos < len(text) and text[pos] != "}":
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _skip_space(text, _skip_space(text, pos) + 1)  # past the ':'
        if key == wanted:
            return pos
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip_space(text, pos)
        pos = _skip_space(text, pos + 1) if text[pos] == "," else pos
    raise ValueError(f"key {wanted!r} not found")  # unreachable for a document that has it


def _array_item_offsets(text: str, pos: int) -> list[int]:
    """Start offsets of the items of the valid JSON array at ``pos``."""
    offsets: list[int] = []
    pos = _skip_space(text, pos + 1)
    while pos < len(text) and text[pos] != "]":
        offsets.append(pos)
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip_space(text, pos)
        pos = _skip_space(text, pos + 1) if text[pos] == "," else pos
    return offsets


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _json_entry(number: int, item: Any) -> SnippetEntry:
    if not isinstance(item, dict):
        got = type(item).__name__
        return SnippetEntry(number, "", error=f"expected a result object, got {got}")
    path = item.get("path")
    if not isinstance(path, str) or not path:
        return SnippetEntry(number, "", error="result has no 'path'")
    for name in _LINE_FIELDS:
        value = item.get(name)
        if value not in (None, "") and (not isinstance(value, int) or isinstance(value, bool)):
            return SnippetEntry(number, path, error=f"{name} must be a whole number, not {value!r}")
    try:
        clean = safe_relpath(path)
    except UnsafePath as exc:
        return SnippetEntry(number, path, error=f"refused: {exc}")
    return SnippetEntry(number, clean, stamp={**item, "path": clean})

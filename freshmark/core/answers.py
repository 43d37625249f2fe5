"""The reference contract of an answer written from a context slice (SPEC §7, §10; seed 004 §9).

An answer cites its evidence as ``[file:Lx-Ly | symbol | high/medium/low]`` (an answer to an
L1 slice may write ``[Lx-Ly | symbol | confidence]``: its slice is about one file) and writes
``[MISSING] …`` naming the file or symbol it needs when the evidence is not in the slice.

This module parses an answer and judges it against the slice it was given (``ServedSlice``,
read from the context's JSON) and against the head, through ``HeadFiles``; it reads nothing
itself. The judgement of one reference:

- **compliant**: all three parts are there: the lines (with their file, unless implied), a
  symbol, and a confidence of high, medium or low; and the symbol is in those lines at the
  head, when they are there;
- **in the slice**: its lines lie inside what a section of the slice showed: its numbered
  body, the lines a trimmed section numbers itself (imports), or, for a section shown as a
  signature or an outline, the anchor's own lines cited by its own name (a member's body an
  outline elided was not shown); a pointer that shows no code shows no lines;
- **exists at the head**: the file is there and has the cited lines;
- **symbol in the lines**: the symbol's name appears in the cited lines at the head;
- **hallucinated**: not in the slice, or not at the head (seed 004 §9: it cites code lines the
  context does not hold).

The four acceptance figures over many answers (seed 004 §9 and its targets):
hallucinated-reference rate < 5 %, location accuracy > 90 % (answers with a gold location that
cite it), contract compliance > 95 % (references with all three parts), and [MISSING] precision
> 80 % ([MISSING] lines whose named file or symbol exists at the head and, with a gold, is one
of the gold's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from freshmark.core.chunking import file_symbols
from freshmark.core.errors import BadInput
from freshmark.core.served_slice import ServedSlice, short_name

CONFIDENCES = ("high", "medium", "low")
# The seed's acceptance targets: (figure, bound, True when the figure must stay below it).
TARGETS: tuple[tuple[str, float, bool], ...] = (
    ("hallucinated_rate", 0.05, True),
    ("location_accuracy", 0.90, False),
    ("compliance", 0.95, False),
    ("missing_precision", 0.80, False),
)
MAX_ANSWER_CHARS = 200_000
MAX_REFERENCES = 500

_BRACKETED = re.compile(r"\[([^\[\]\n]{1,400})\]")
_LOCATION = re.compile(
    r"^\s*(?:(?P<path>[^\s:|][^:|]*?)\s*:\s*)?L(?P<start>\d{1,7})"
    r"(?:\s*[-–]\s*L?(?P<end>\d{1,7}))?\s*$"
)
_HAS_LINES = re.compile(r"(?:^|[:\s])L\d")
_MISSING = re.compile(r"\[MISSING\]\s*(?P<what>[^\n]*)")
_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
_PATH_LIKE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/])")
_IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)*)(\(\))?")
_FILE_EXTENSIONS = frozenset(
    "py pyi js jsx mjs cjs ts tsx go rs java kt kts scala swift c h cc cpp cxx hpp hh cs rb "
    "php pl lua sh bash zsh sql md rst txt toml yaml yml json ini cfg conf xml html css scss "
    "vue svelte proto gradle lock mod sum".split())
_PLACEHOLDER_SYMBOLS = frozenset({"", "-", "?", "symbol", "n/a", "none"})
_MODULE_SYMBOL = re.compile(r"^<module>")


class HeadFiles(Protocol):
    """Today's files of the repository the answer is about (the caller reads git)."""

    def text(self, path: str) -> str | None:
        """The file's text at the head, None when it is absent (or may not be read)."""


# -- what the answer says --------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """One ``[file:Lx-Ly | symbol | confidence]`` as written (``path`` None when omitted)."""

    text: str
    path: str | None
    start_line: int
    end_line: int
    symbol: str
    confidence: str


@dataclass(frozen=True)
class MissingLine:
    """One ``[MISSING]`` line and the files and symbols it names."""

    text: str
    paths: tuple[str, ...]
    symbols: tuple[str, ...]


@dataclass(frozen=True)
class ParsedAnswer:
    references: tuple[Reference, ...]
    missing: tuple[MissingLine, ...]


def parse_answer(answer: str) -> ParsedAnswer:
    """The references and [MISSING] lines of ``answer``; bracketed text without ``L<n>`` lines
    (links, notes) is not a reference."""
    if len(answer) > MAX_ANSWER_CHARS:
        raise BadInput(f"the answer has {len(answer)} characters; at most {MAX_ANSWER_CHARS}")
    references = []
    for match in _BRACKETED.finditer(answer):
        body = match.group(1)
        if body.strip() == "MISSING" or not _HAS_LINES.search(body.split("|")[0]):
            continue
        references.append(_reference(match.group(0), body))
        if len(references) > MAX_REFERENCES:
            raise BadInput(f"the answer cites more than {MAX_REFERENCES} references")
    missing = tuple(_missing_line(m.group(0).strip(), m.group("what"))
                    for m in _MISSING.finditer(answer))
    return ParsedAnswer(tuple(references), missing)


def _reference(text: str, body: str) -> Reference:
    parts = [p.strip() for p in body.split("|")]
    location = _LOCATION.match(parts[0])
    if location is None:  # lines written in a form the contract does not know
        return Reference(text, None, 0, 0, _part(parts, 1), _part(parts, 2).lower())
    start = int(location.group("start"))
    end = int(location.group("end") or start)
    return Reference(text, location.group("path"), start, end, _part(parts, 1),
                     _part(parts, 2).lower())


def _part(parts: Sequence[str], index: int) -> str:
    return parts[index] if index < len(parts) else ""


def _missing_line(text: str, what: str) -> MissingLine:
    quoted = [m.group(1) for m in _BACKTICKED.finditer(what)]
    prose = _BACKTICKED.sub(" ", what)
    paths: list[str] = []
    symbols: list[str] = []
    for candidate, backticked in [*((q, True) for q in quoted), (prose, False)]:
        found = [p for p in _PATH_LIKE.findall(candidate) if _is_path(p)]
        paths.extend(found)
        for path in found:
            candidate = candidate.replace(path, " ")
        symbols.extend(name for name, _call in _IDENTIFIER.findall(candidate)
                       if _looks_like_code(name, candidate, backticked))
    return MissingLine(text, tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(symbols)))


def _is_path(token: str) -> bool:
    """``src/app.py`` and ``setup.cfg`` are files; ``Flask.make_response`` is a symbol."""
    return "/" in token or token.rsplit(".", 1)[-1].lower() in _FILE_EXTENSIONS


def _looks_like_code(name: str, context: str, backticked: bool) -> bool:
    """A name that prose would not write: backticked, dotted, snake_case, CamelCase, called."""
    if backticked:
        return True
    inner_capital = any(c.isupper() for c in name[1:]) and not name.isupper()
    return ("." in name or "::" in name or "_" in name.strip("_") or inner_capital
            or f"{name}()" in context)


# -- the judgement ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoldLocation:
    """Where the answer really is: a file, and its lines or its symbol."""

    path: str
    start_line: int = 0
    end_line: int = 0
    symbol: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GoldLocation:
        try:
            return cls(str(data["path"]), int(data.get("start_line") or 0),
                       int(data.get("end_line") or data.get("start_line") or 0),
                       str(data.get("symbol") or ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput("a gold location needs 'path' and may have 'start_line', "
                           "'end_line' and 'symbol'") from exc

    def hit_by(self, path: str | None, start: int, end: int, symbol: str) -> bool:
        if path != self.path:
            return False
        if self.start_line:
            return start <= self.end_line and self.start_line <= end
        return bool(self.symbol) and short_name(symbol) == short_name(self.symbol)


@dataclass(frozen=True)
class ReferenceCheck:
    reference: Reference
    path: str | None
    problems: tuple[str, ...]
    compliant: bool
    in_slice: bool
    at_head: bool
    symbol_in_lines: bool | None
    on_gold: bool | None

    @property
    def hallucinated(self) -> bool:
        return not (self.in_slice and self.at_head)

    def to_dict(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "text": ref.text, "path": self.path, "start_line": ref.start_line,
            "end_line": ref.end_line, "symbol": ref.symbol, "confidence": ref.confidence,
            "compliant": self.compliant, "in_slice": self.in_slice, "at_head": self.at_head,
            "symbol_in_lines": self.symbol_in_lines, "hallucinated": self.hallucinated,
            "on_gold": self.on_gold, "problems": list(self.problems),
        }


@dataclass(frozen=True)
class MissingCheck:
    line: MissingLine
    existing: tuple[str, ...]
    on_gold: bool | None

    @property
    def names_anything(self) -> bool:
        return bool(self.line.paths or self.line.symbols)

    @property
    def precise(self) -> bool:
        """It names something that exists (and, with a gold, something the gold holds)."""
        return bool(self.existing) and self.on_gold is not False

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.line.text, "paths": list(self.line.paths),
                "symbols": list(self.line.symbols), "existing": list(self.existing),
                "on_gold": self.on_gold, "precise": self.precise}


@dataclass(frozen=True)
class AnswerReport:
    references: tuple[ReferenceCheck, ...]
    missing: tuple[MissingCheck, ...]
    gold: tuple[GoldLocation, ...] = ()

    @property
    def hallucinated_refs(self) -> int:
        return sum(1 for r in self.references if r.hallucinated)

    @property
    def compliance(self) -> float:
        """Share of references with all three parts; an answer with none complies only by
        saying [MISSING]."""
        if not self.references:
            return 1.0 if self.missing else 0.0
        return sum(1 for r in self.references if r.compliant) / len(self.references)

    @property
    def location_accurate(self) -> bool | None:
        if not self.gold:
            return None
        return any(r.on_gold for r in self.references)

    @property
    def passed(self) -> bool:
        """The gate for one answer: nothing hallucinated and the whole contract kept."""
        return self.hallucinated_refs == 0 and self.compliance == 1.0

    def to_dict(self) -> dict[str, Any]:
        precise = sum(1 for m in self.missing if m.precise)
        return {
            "passed": self.passed, "refs": len(self.references),
            "hallucinated_refs": self.hallucinated_refs,
            "hallucinated_rate": _rate(self.hallucinated_refs, len(self.references)),
            "compliance": round(self.compliance, 4),
            "location_accuracy": None if self.location_accurate is None
            else float(self.location_accurate),
            "missing_lines": len(self.missing),
            "missing_precision": _rate(precise, len(self.missing)),
            "references": [r.to_dict() for r in self.references],
            "missing": [m.to_dict() for m in self.missing],
        }


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def check_reference(reference: Reference, served: ServedSlice, head: HeadFiles,
                    gold: Sequence[GoldLocation] = ()) -> ReferenceCheck:
    """Judge one reference against the slice and the head (see the module docstring)."""
    problems: list[str] = []
    path = reference.path
    if path is None and reference.start_line and served.level == "L1":
        path = served.evidence_path  # the seed's L1 template cites lines only
    if not reference.start_line:
        problems.append("lines not written as Lx-Ly")
    elif path is None:
        problems.append("no file")
    elif reference.end_line < reference.start_line:
        problems.append("the range ends before it starts")
    if reference.symbol.lower() in _PLACEHOLDER_SYMBOLS:
        problems.append("no symbol")
    if reference.confidence not in CONFIDENCES:
        problems.append("no confidence (high, medium or low)")
    written_whole = not problems
    start, end = reference.start_line, reference.end_line
    in_slice = path is not None and served.holds(path, start, end, reference.symbol)
    if path is not None and start and not in_slice:
        problems.append("lines not in the slice served")
    text = head.text(path) if path is not None and start else None
    line_count = len(text.splitlines()) if text is not None else 0
    at_head = text is not None and 1 <= start <= end <= line_count
    if path is not None and start and not at_head:
        problems.append("file absent at the head" if text is None
                        else f"lines past the end of the file ({line_count} lines)")
    symbol_in_lines = _symbol_in_lines(reference.symbol, text, start, end, path or "") \
        if at_head else None
    if symbol_in_lines is False:
        problems.append(f"{reference.symbol} is not in those lines")
    compliant = written_whole and symbol_in_lines is not False
    on_gold = any(g.hit_by(path, start, end, reference.symbol) for g in gold) if gold else None
    return ReferenceCheck(reference, path, tuple(problems), compliant, in_slice, at_head,
                          symbol_in_lines, on_gold)


def _symbol_in_lines(symbol: str, text: str | None, start: int, end: int,
                     path: str) -> bool | None:
    """The cited lines hold the symbol's name, or lie inside its definition (a few lines of
    a long function cited by the function's name)."""
    name = short_name(symbol)
    if text is None or not name or _MODULE_SYMBOL.match(symbol) or \
            symbol.lower() in _PLACEHOLDER_SYMBOLS:
        return None
    lines = "\n".join(text.splitlines()[start - 1 : end])
    if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", lines) is not None:
        return True
    return any(first <= start and end <= last
               for defined, spans in _definitions(path, text).items()
               if defined == symbol or short_name(defined) == symbol
               for first, last in spans)


@lru_cache(maxsize=8)
def _definitions(path: str, text: str) -> dict[str, list[tuple[int, int]]]:
    """Each definition of the file at the head and the lines of every one of that name
    (overloads: ``emitCode(s)`` and ``emitCode(codeBlock, …)``), one parse per file checked."""
    return file_symbols(path, text).units


def check_missing(line: MissingLine, existing: Iterable[str],
                  gold: Sequence[GoldLocation] = ()) -> MissingCheck:
    """Judge a [MISSING] line given which of its names exist at the head."""
    found = tuple(existing)
    on_gold = None
    if gold:
        gold_names = {g.path for g in gold} | {short_name(g.symbol) for g in gold if g.symbol}
        on_gold = any(name in gold_names or short_name(name) in gold_names for name in found)
    return MissingCheck(line, found, on_gold)


# -- many answers ----------------------------------------------------------------------------------
@dataclass
class AcceptanceSummary:
    """The seed's four figures over a folder of answers (seed 004 §9)."""

    answers: int = 0
    refs: int = 0
    hallucinated_refs: int = 0
    compliant_refs: int = 0
    answers_without_refs: int = 0
    gold_answers: int = 0
    accurate_answers: int = 0
    missing_lines: int = 0
    precise_missing: int = 0
    failed: list[str] = field(default_factory=list)

    def add(self, name: str, report: AnswerReport) -> None:
        self.answers += 1
        self.refs += len(report.references)
        self.hallucinated_refs += report.hallucinated_refs
        self.compliant_refs += sum(1 for r in report.references if r.compliant)
        self.answers_without_refs += not report.references and not report.missing
        if report.location_accurate is not None:
            self.gold_answers += 1
            self.accurate_answers += report.location_accurate
        self.missing_lines += len(report.missing)
        self.precise_missing += sum(1 for m in report.missing if m.precise)
        if not report.passed:
            self.failed.append(name)

    def figures(self) -> dict[str, float | None]:
        # An answer with neither a reference nor [MISSING] breaks the contract as a whole.
        written = self.refs + self.answers_without_refs
        return {
            "hallucinated_rate": _rate(self.hallucinated_refs, self.refs),
            "location_accuracy": _rate(self.accurate_answers, self.gold_answers),
            "compliance": _rate(self.compliant_refs, written),
            "missing_precision": _rate(self.precise_missing, self.missing_lines),
        }

    def verdicts(self) -> dict[str, bool | None]:
        """Each figure against its target; None where nothing measured it."""
        figures = self.figures()
        out: dict[str, bool | None] = {}
        for name, bound, below in TARGETS:
            value = figures[name]
            out[name] = None if value is None else (value < bound if below else value > bound)
        return out

    @property
    def passed(self) -> bool:
        return all(v is not False for v in self.verdicts().values()) and self.answers > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "answers": self.answers, "refs": self.refs,
            "hallucinated_refs": self.hallucinated_refs, "gold_answers": self.gold_answers,
            "missing_lines": self.missing_lines, "figures": self.figures(),
            "targets": {name: {"bound": bound, "below": below} for name, bound, below in TARGETS},
            "meets_targets": self.verdicts(), "passed": self.passed,
            "failed_answers": self.failed,
        }

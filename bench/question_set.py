"""The everyday-questions set: loading, validation, the wording rule and the hit rule.

Kept apart from ``bench_questions.py`` (which indexes and searches) so that the data can be
validated and the scoring rules tested without a store, a model or the fetched repositories.

Data: ``bench/questions/*.jsonl``, one question a line (fields in ``REQUIRED``; see
``bench/questions/README.md``). Each answer is one definition at a pinned commit, with optional
``alternatives`` (equally right definitions, e.g. the async twin of a sync method).

Hit rule (symbol level): a chunk result answers a question when its path equals the answer's
path and either its symbol equals the answer's symbol, or it is not a container outline (kinds in
``CONTAINER_KINDS``: class, struct, interface, module, ...) and at least half of its own lines lie
within the answer's ``start_line..end_line`` (a part of a split function, a block holding exactly
the answer), or it is a definition (neither an outline nor a module block or window) that
ends where the answer ends and starts above it: the answer with its doc comment (a JSDoc block
set apart by a blank line, which the answer's lines leave out). A class outline or a module
block that merely spans the answer does not count: an agent served it still has to find the
function. File level: a file answers when its path equals
the answer's path. An answer's ``alternatives`` count the same as the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from freshmark.core.chunking.model import CONTAINER_KINDS, NOT_ONE_DEFINITION

QUESTIONS_DIR = Path(__file__).resolve().parent / "questions"
WORDINGS = ("code-like", "paraphrase")
LANGUAGES = ("python", "go", "javascript", "typescript", "rust", "java")
REQUIRED = {
    "id": str,
    "repo": str,
    "commit": str,
    "language": str,
    "question": str,
    "path": str,
    "symbol": str,
    "start_line": int,
    "end_line": int,
    "wording": str,
}
_SHA = re.compile(r"[0-9a-f]{40}")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
# Words too common in identifiers to show that a question borrows the code's vocabulary.
_STOP_WORDS = frozenset({"for", "with", "the", "and", "from", "to", "of", "is", "by", "on"})


@dataclass(frozen=True)
class Answer:
    path: str
    symbol: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Question:
    id: str
    repo: str
    commit: str
    language: str
    question: str
    wording: str
    answer: Answer
    alternatives: tuple[Answer, ...] = field(default=())

    @property
    def answers(self) -> tuple[Answer, ...]:
        return (self.answer, *self.alternatives)


@dataclass(frozen=True)
class Hit:
    """One ranked search result, reduced to what the hit rule reads."""

    path: str
    symbol: str
    start_line: int
    end_line: int
    kind: str


def name_words(symbol: str) -> list[str]:
    """The words of a symbol's own name (its last dotted part), split on case and underscores."""
    last = symbol.split(".")[-1]
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", last)
    return [w.lower() for w in words if w.lower() not in _STOP_WORDS]


def _question_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()))


def _same_word(name_word: str, question_word: str) -> bool:
    # A shared stem of four letters or more counts ("raise"/"raised", "header"/"headers").
    if name_word == question_word:
        return True
    short, long_ = sorted((name_word, question_word), key=len)
    return len(short) >= 4 and long_.startswith(short)


def wording_of(symbol: str, question: str) -> str:
    """``code-like`` when the question reuses at least half of the answer's name words."""
    words = name_words(symbol)
    asked = _question_words(question)
    shared = [w for w in words if any(_same_word(w, a) for a in asked)]
    return "code-like" if words and 2 * len(shared) >= len(words) else "paraphrase"


def _answer(row: dict[str, object]) -> Answer:
    return Answer(
        str(row["path"]), str(row["symbol"]), int(str(row["start_line"])), int(str(row["end_line"]))
    )


def _answer_problems(prefix: str, row: dict[str, object]) -> list[str]:
    problems = []
    for key in ("path", "symbol"):
        if not isinstance(row.get(key), str) or not row.get(key):
            problems.append(f"{prefix}: {key} must be a non-empty string")
    start, end = row.get("start_line"), row.get("end_line")
    if not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end):
        problems.append(f"{prefix}: lines must be integers with 1 <= start_line <= end_line")
    return problems


def row_problems(row: dict[str, object]) -> list[str]:
    """Everything wrong with one question row (empty when it is well-formed)."""
    ident = str(row.get("id", "?"))
    problems = [
        f"{ident}: {key} must be {kind.__name__}"
        for key, kind in REQUIRED.items()
        if not isinstance(row.get(key), kind)
    ]
    if problems:
        return problems
    problems += _answer_problems(ident, row)
    if not _SHA.fullmatch(str(row["commit"])):
        problems.append(f"{ident}: commit must be a full 40-hex sha")
    if not _REPO.fullmatch(str(row["repo"])):
        problems.append(f"{ident}: repo must be owner/name")
    if row["language"] not in LANGUAGES:
        problems.append(f"{ident}: unknown language {row['language']!r}")
    if row["wording"] not in WORDINGS:
        problems.append(f"{ident}: wording must be one of {WORDINGS}")
    elif row["wording"] != wording_of(str(row["symbol"]), str(row["question"])):
        problems.append(f"{ident}: wording disagrees with the wording rule")
    if str(row["path"]).startswith("/") or ".." in str(row["path"]).split("/"):
        problems.append(f"{ident}: path must be relative to the repository root")
    for n, alt in enumerate(row.get("alternatives") or []):  # type: ignore[attr-defined]
        problems += _answer_problems(f"{ident} alternative {n}", alt)
    return problems


def read_rows(directory: Path = QUESTIONS_DIR) -> list[dict[str, object]]:
    rows = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path.name}:{number}: not JSON ({exc})") from exc
    return rows


def set_problems(rows: list[dict[str, object]]) -> list[str]:
    """Row problems plus the set's own: unique ids and questions, one commit per repository."""
    problems = [p for row in rows for p in row_problems(row)]
    for key in ("id", "question"):
        seen = [str(row.get(key)) for row in rows]
        repeated = sorted({v for v in seen if seen.count(v) > 1})
        problems += [f"duplicate {key}: {v}" for v in repeated]
    commits: dict[str, set[str]] = {}
    for row in rows:
        commits.setdefault(str(row.get("repo")), set()).add(str(row.get("commit")))
    problems += [f"{repo}: several commits" for repo, shas in commits.items() if len(shas) > 1]
    return problems


def load_questions(directory: Path = QUESTIONS_DIR) -> list[Question]:
    rows = read_rows(directory)
    problems = set_problems(rows)
    if problems:
        raise ValueError("bad question set:\n" + "\n".join(problems))
    return [
        Question(
            id=str(row["id"]),
            repo=str(row["repo"]),
            commit=str(row["commit"]),
            language=str(row["language"]),
            question=str(row["question"]),
            wording=str(row["wording"]),
            answer=_answer(row),
            alternatives=tuple(_answer(a) for a in row.get("alternatives") or []),  # type: ignore[attr-defined]
        )
        for row in rows
    ]


def _mostly_inside(hit: Hit, answer: Answer) -> bool:
    inside = min(hit.end_line, answer.end_line) - max(hit.start_line, answer.start_line) + 1
    return hit.kind not in CONTAINER_KINDS and 2 * inside >= hit.end_line - hit.start_line + 1


def _with_its_doc(hit: Hit, answer: Answer) -> bool:
    return hit.kind not in NOT_ONE_DEFINITION and \
        hit.end_line == answer.end_line and hit.start_line <= answer.start_line


def symbol_hit(question: Question, hit: Hit) -> bool:
    """The hit rule of the module docstring, for a chunk result."""
    return any(
        hit.path == a.path and (hit.symbol == a.symbol or _mostly_inside(hit, a)
                                or _with_its_doc(hit, a))
        for a in question.answers
    )


def file_hit(question: Question, path: str) -> bool:
    return any(path == a.path for a in question.answers)


def first_rank(flags: Iterable[bool]) -> int | None:
    """1-based rank of the first true flag, or None."""
    return next((rank for rank, flag in enumerate(flags, 1) if flag), None)

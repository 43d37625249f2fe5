"""Verdict labels on real history: is each chunk of an older commit labelled right at a newer one?

Data: ../shared/eval/swebench/dev.jsonl (real issues on public repositories, each with the
``base_commit`` its fix started from and the files the fix touched). For each instance the
chunks of an older commit are verified against a newer one:

- ``--span fix`` (default): indexed at ``base_commit``, verified at the upstream fix (the first
  commit on the ancestry path ``base_commit..<branch>`` that touches the gold files);
- ``--span next``: indexed at one instance's ``base_commit``, verified at the next instance's
  (in commit order), a longer stretch of history with more renames and moves.

The chunks are those of every ``.py`` file the diff between the two commits touches
(modified, deleted or renamed), chunked with freshmark's chunker and stamped at the older
commit: every one of them needs more than the blob fast path, so this is the hard part of a
search's results (a result in an untouched file is ``older_identical`` by one tree lookup).

Each label is checked against an oracle that shares no code with the verifier: ``git diff -M``
for renames, ``git cat-file`` for blobs, Python's ``ast`` for which definitions exist where,
and plain line matching for module-level code:

- the blob at the same path (or, for a file ``git diff -M`` calls renamed, at its new path) is
  the indexed blob -> ``older_identical``;
- a function, method or class whose qualified name is still defined in today's file (at any
  depth: inside ``if``/``try`` blocks, decorated, overloaded) -> ``changed``;
- module-level code of which at least half of the non-blank lines are still in today's file
  -> ``changed``; otherwise -> ``historical``.

A label is right when it equals the oracle's; ``false safe`` counts results labelled usable as
is (``current``/``older_identical``) whose content is not today's. For ``changed`` functions
the current lines must contain the definition's line.

Usage::

    .venv/bin/python bench/bench_verdicts.py --mirrors /work/.mirror \\
        [--repos pydata/xarray,mwaskom/seaborn] [--span fix|next] [--limit N] [--show-wrong]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.chunking import chunk_text
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import SAFE_VERDICTS, Target, Verdict, Verification
from freshmark.services.verifier import Verifier

DEV_NAME = Path("shared", "eval", "swebench", "dev.jsonl")
DEV = next((up / DEV_NAME for up in ROOT.parents if (up / DEV_NAME).exists()), DEV_NAME)
MAX_FILES_PER_PAIR = 40
MODULE_LINES_KEPT = 0.5
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=clone, check=True, capture_output=True,
                          text=True, errors="replace").stdout


def find_clone(mirrors: Path, repo: str) -> Path | None:
    owner, name = repo.split("/")
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}",
                      mirrors / name):
        if candidate.exists():
            return candidate
    return None


def blob_at(clone: Path, commit: str, path: str) -> str | None:
    out = subprocess.run(["git", "rev-parse", "--verify", "-q", f"{commit}:{path}"], cwd=clone,
                         capture_output=True, text=True)
    return out.stdout.strip() or None


def text_of(clone: Path, blob: str) -> str:
    return git(clone, "cat-file", "blob", blob)


# -- the oracle --------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def definitions(text: str) -> dict[str, list[int]]:
    """Qualified name (classes and functions on the way, any depth) -> definition lines."""
    return {name: [first for first, _ in spans] for name, spans in definition_spans(text).items()}


@functools.lru_cache(maxsize=64)
def definition_spans(text: str) -> dict[str, list[tuple[int, int]]]:
    """Qualified name -> (first, last) line of each definition, decorators left out."""
    found: dict[str, list[tuple[int, int]]] = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return found

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, DEFINITIONS):
                name = ".".join([*scope, child.name])
                found.setdefault(name, []).append((child.lineno,
                                                   child.end_lineno or child.lineno))
                visit(child, [*scope, child.name])
            else:
                visit(child, scope)

    visit(tree, [])
    return found


def lines_kept(old_text: str, new_text: str) -> float:
    wanted = Counter(line.strip() for line in old_text.splitlines() if line.strip())
    have = Counter(line.strip() for line in new_text.splitlines() if line.strip())
    total = sum(wanted.values())
    return sum((wanted & have).values()) / total if total else 1.0


def moved_here(record: ChunkRecord, text: str) -> bool:
    """``text`` defines the record's symbol with at least half of its lines."""
    lines = text.splitlines()
    return any(lines_kept(record.text, "\n".join(lines[first - 1:last])) >= MODULE_LINES_KEPT
               for first, last in definition_spans(text).get(record.symbol, []))


@dataclass
class Truth:
    verdict: Verdict
    def_lines: list[int]
    def_spans: list[tuple[int, int]] = dataclasses.field(default_factory=list)


def truth(record: ChunkRecord, new_blob: str | None, new_text: str | None,
          elsewhere: list[str]) -> Truth:
    """The right label; ``elsewhere`` holds the texts of the files the diff added or modified,
    where a symbol of a deleted file may have gone."""
    if new_blob == record.blob_sha:
        return Truth(Verdict.OLDER_IDENTICAL, [])
    if new_text is None:
        moved = not record.symbol.startswith("<module>") and any(
            moved_here(record, text) for text in elsewhere)
        return Truth(Verdict.CHANGED if moved else Verdict.HISTORICAL, [])
    if record.symbol.startswith("<module>"):
        kept = lines_kept(record.text, new_text) >= MODULE_LINES_KEPT
        return Truth(Verdict.CHANGED if kept else Verdict.HISTORICAL, [])
    spans = definition_spans(new_text).get(record.symbol, [])
    return Truth(Verdict.CHANGED if spans else Verdict.HISTORICAL,
                 [first for first, _ in spans], spans)


# -- one pair of commits -----------------------------------------------------------------------
def renames(clone: Path, old: str, new: str) -> dict[str, str]:
    out = git(clone, "diff", "--name-status", "-M", old, new)
    moved: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R") and len(parts) == 3:
            moved[parts[1]] = parts[2]
    return moved


def landing_texts(clone: Path, old: str, new: str) -> list[str]:
    """Today's texts of the ``.py`` files the diff added or modified."""
    out = git(clone, "diff", "--name-only", "--no-renames", "--diff-filter=AM", old, new)
    paths = [p for p in out.splitlines() if p.endswith(".py")]
    blobs = [blob_at(clone, new, p) for p in paths]
    return [text_of(clone, b) for b in blobs if b]


def touched_py(clone: Path, old: str, new: str) -> list[str]:
    out = git(clone, "diff", "--name-only", "--no-renames", "--diff-filter=MDT", old, new)
    return [p for p in out.splitlines() if p.endswith(".py")][:MAX_FILES_PER_PAIR]


def records_at(clone: Path, repo: str, commit: str, path: str) -> list[ChunkRecord]:
    blob = blob_at(clone, commit, path)
    if blob is None:
        return []
    text = text_of(clone, blob)
    return [ChunkRecord(repo, "bench", commit, path, c.symbol, c.start_line, c.end_line,
                        "2026-01-01T00:00:00Z", blob, "0" * 64, kind=c.kind, language="python",
                        text=c.text)
            for c in chunk_text(path, text)]


@dataclass
class Tally:
    total: int = 0
    right: int = 0
    false_safe: int = 0
    lines_checked: int = 0
    lines_right: int = 0
    moved: int = 0


def lines_right(record: ChunkRecord, got: Verification, want: Truth) -> bool:
    """The lines given hold the definition's first line; for a later part of a split
    definition, they lie inside the definition and below its first line (the part's own
    lines, not the whole definition to read again)."""
    start, end = got.current_start_line or 0, got.current_end_line or 0
    if record.head_lines:
        return any(first < start and end <= last for first, last in want.def_spans)
    return any(start <= line <= end for line in want.def_lines)


def judge(tally: Tally, record: ChunkRecord, got: Verification, want: Truth,
          wrong: list[str], where: str) -> None:
    tally.total += 1
    ok = got.verdict == want.verdict
    tally.right += ok
    if got.verdict in SAFE_VERDICTS and want.verdict not in SAFE_VERDICTS:
        tally.false_safe += 1
    if ok and want.def_lines and got.current_start_line is not None:
        tally.lines_checked += 1
        tally.lines_right += lines_right(record, got, want)
    if not ok:
        wrong.append(f"{where} {record.path}::{record.symbol} L{record.start_line}: "
                     f"got {got.verdict} want {want.verdict} ({got.reason[:120]})")


def run_pair(clone: Path, repo: str, old: str, new: str, tally: Tally, wrong: list[str]) -> None:
    moved = renames(clone, old, new)
    gitrepo = GitRepo.open(clone)
    verifier = Verifier(gitrepo, Target("bench", new))
    elsewhere: list[str] | None = None
    for path in touched_py(clone, old, new) + [p for p in moved if p.endswith(".py")]:
        now_path = moved.get(path, path)
        new_blob = blob_at(clone, new, now_path)
        new_text = text_of(clone, new_blob) if new_blob else None
        if new_blob is None and elsewhere is None:
            elsewhere = landing_texts(clone, old, new)
        for record in records_at(clone, repo, old, path):
            got = verifier.verify(record)
            tally.moved += got.moved_to is not None
            judge(tally, record, got, truth(record, new_blob, new_text, elsewhere or []),
                  wrong, f"{old[:8]}..{new[:8]}")


def fix_commit(clone: Path, base: str, gold: list[str], branch: str) -> str | None:
    out = git(clone, "log", "--ancestry-path", "--format=%H", "--reverse", f"{base}..{branch}",
              "--", *gold).split()
    return out[0] if out else None


def pairs(clone: Path, rows: list[dict[str, object]], span: str,
          branch: str) -> list[tuple[str, str]]:
    if span == "fix":
        found = [(str(r["base_commit"]), fix_commit(clone, str(r["base_commit"]),
                                                   list(r["gold_files"]), branch))  # type: ignore[call-overload]
                 for r in rows]
        return [(old, new) for old, new in found if new]
    bases = sorted({str(r["base_commit"]) for r in rows},
                   key=lambda sha: int(git(clone, "show", "-s", "--format=%ct", sha)))
    return list(zip(bases, bases[1:], strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--repos", default="pydata/xarray,mwaskom/seaborn,astropy/astropy")
    parser.add_argument("--span", choices=("fix", "next"), default="fix")
    parser.add_argument("--branch", default="HEAD", help="where fixes are looked for")
    parser.add_argument("--limit", type=int, default=0, help="instances per repository")
    parser.add_argument("--dev", type=Path, default=DEV, help="the instances (dev.jsonl)")
    parser.add_argument("--show-wrong", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.dev.read_text().splitlines()]
    total, wrong = Tally(), []
    started = time.perf_counter()
    for repo in args.repos.split(","):
        clone = find_clone(args.mirrors, repo)
        if clone is None:
            print(f"{repo}: no mirror under {args.mirrors}, skipped")
            continue
        mine = [r for r in rows if r["repo"] == repo]
        mine = mine[:args.limit] if args.limit else mine
        tally = Tally()
        for old, new in pairs(clone, mine, args.span, args.branch):
            run_pair(clone, repo, old, new, tally, wrong)
        print(f"{repo}: {tally.right}/{tally.total} labels right, {tally.false_safe} false safe, "
              f"{tally.moved} moved, lines right {tally.lines_right}/{tally.lines_checked}")
        for name in ("total", "right", "false_safe", "lines_checked", "lines_right", "moved"):
            setattr(total, name, getattr(total, name) + getattr(tally, name))
    share = 100 * total.right / total.total if total.total else 0.0
    print(f"all: {total.right}/{total.total} = {share:.2f} % right, {total.false_safe} false "
          f"safe, {total.moved} moved, current lines right {total.lines_right}/"
          f"{total.lines_checked} ({time.perf_counter() - started:.1f} s)")
    if args.show_wrong:
        print("\n".join(wrong))


if __name__ == "__main__":
    main()

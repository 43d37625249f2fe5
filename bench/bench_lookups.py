"""Looking a name up: does a search for nothing but a name put the line that declares it
first?

A constant's, a macro's or a module variable's name has no chunk of its own: its declaration
sits in a class outline, a module block or a header's block, and the chunks that use it, or
merely share its words (``BIT_SET``: bit, set), rank above it. A function's own name may give
BM25 nothing to find it by (``in_`` is the stop word ``in``; ``has`` is in every docstring),
and a type stub (``.pyi``) or the code calling it ranks above the definition. Each lookup below
was checked by hand at the repository's head as fetched here (the commit is printed): the file
and line of the declaration. A lookup is answered at rank r when the r-th result's lines hold
that line. Every repository is cloned from its mirror and indexed from a new home, with the
default embedder unless ``--embedder``.

Usage::

    .venv/bin/python bench/bench_lookups.py --mirrors /work/.mirror [--home DIR] [-k 10]
        [--embedder hashing] [--json OUT] [--repos OWNER+NAME,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# (mirror name, name looked up, file, line of its declaration), checked at the mirror's head.
LOOKUPS = [
    ("google+gson", "BIT_SET",
     "gson/src/main/java/com/google/gson/internal/bind/TypeAdapters.java", 92),
    ("sindresorhus+got", "methodsWithoutBody", "source/core/index.ts", 83),
    ("antirez+sds", "SDS_TYPE_MASK", "sds.h", 81),
    ("antirez+sds", "SDS_MAX_PREALLOC", "sds.h", 36),
    ("sinatra+sinatra", "DEFAULT_OPTIONS", "rack-protection/lib/rack/protection/base.rb", 33),
    ("sinatra+sinatra", "CALLERS_TO_IGNORE", "lib/sinatra/base.rb", 1291),
    ("urfave+cli", "ErrWriter", "errors.go", 15),
    ("spf13+cobra", "EnablePrefixMatching", "cobra.go", 55),
    ("python-attrs+attrs", "has", "src/attr/_funcs.py", 352),
    ("python-attrs+attrs", "in_", "src/attr/validators.py", 260),
    ("python-attrs+attrs", "and_", "src/attr/_make.py", 3381),
    ("immerjs+immer", "freeze", "src/utils/common.ts", 254),
    ("nlohmann+json", "scan_number", "include/nlohmann/detail/input/lexer.hpp", 970),
]


@dataclass
class Answer:
    repo: str
    name: str
    rank: int | None  # 1-based; None when not in the top k
    seconds: float


def freshmark(home: Path, embedder: str, *args: str) -> str:
    env = {**os.environ, "FRESHMARK_HOME": str(home), "FRESHMARK_EMBEDDER": embedder}
    done = subprocess.run([str(Path(sys.executable).parent / "freshmark"), *args], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"freshmark {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def rank_of(results: list[dict], path: str, line: int) -> int | None:
    for result in results:
        if result["path"] == path and result["start_line"] <= line <= result["end_line"]:
            return int(result["rank"])
    return None


def run(mirrors: Path, home: Path, work: Path, embedder: str, k: int,
        only: set[str] | None = None) -> list[Answer]:
    answers: list[Answer] = []
    for repo in dict.fromkeys(name for name, *_ in LOOKUPS):
        if only is not None and repo not in only:
            continue
        source = mirrors / repo / "repo"
        if not source.is_dir():
            print(f"  {repo}: no mirror, skipped (fetch github:{repo.replace('+', '/')})")
            continue
        clone = work / repo
        subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
        head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        started = time.perf_counter()
        freshmark(home, embedder, "index", str(clone))
        print(f"  {repo}@{head}: indexed in {time.perf_counter() - started:.0f} s")
        for _, name, path, line in (entry for entry in LOOKUPS if entry[0] == repo):
            started = time.perf_counter()
            out = freshmark(home, embedder, "search", name, "--repo", str(clone), "-k",
                            str(k), "--json")
            seconds = time.perf_counter() - started
            answers.append(Answer(repo, name, rank_of(json.loads(out)["results"], path, line),
                                  seconds))
    return answers


def report(answers: list[Answer], k: int) -> dict[str, float]:
    for answer in answers:
        where = f"rank {answer.rank}" if answer.rank else f"not in the top {k}"
        print(f"  {answer.repo:20} {answer.name:22} {where}")
    ranks = [a.rank for a in answers]
    figures = {
        "lookups": len(answers),
        "acc_at_1": sum(r == 1 for r in ranks) / len(ranks) if ranks else 0.0,
        "acc_at_3": sum(bool(r and r <= 3) for r in ranks) / len(ranks) if ranks else 0.0,
        "mrr": sum(1 / r for r in ranks if r) / len(ranks) if ranks else 0.0,
    }
    print(f"  Acc@1 {figures['acc_at_1']:.2f}  Acc@3 {figures['acc_at_3']:.2f}  "
          f"MRR {figures['mrr']:.3f}  ({len(answers)} lookups, top {k})")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True,
                        help="folder of mirrors as fetch makes them (OWNER+NAME/repo)")
    parser.add_argument("--home", type=Path, help="freshmark home (default: a new one)")
    parser.add_argument("-k", type=int, default=10, help="results asked for")
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    parser.add_argument("--json", type=Path, help="write the answers and figures here")
    parser.add_argument("--repos", help="only these mirrors, comma-separated (OWNER+NAME)")
    args = parser.parse_args()
    only = set(args.repos.split(",")) if args.repos else None
    with tempfile.TemporaryDirectory(prefix="lookups-") as scratch:
        home = args.home or Path(scratch) / "home"
        answers = run(args.mirrors, home, Path(scratch) / "clones", args.embedder, args.k,
                      only)
    figures = report(answers, args.k)
    if args.json:
        args.json.write_text(json.dumps({"figures": figures,
                                         "answers": [a.__dict__ for a in answers]}, indent=1))


if __name__ == "__main__":
    main()

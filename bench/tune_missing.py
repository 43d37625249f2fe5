"""When does a context slice say ``[MISSING]`` for a question in words? Positives and negatives.

Positives: the held-out everyday questions (``bench/questions/heldout``) of six repositories,
each asked of its own repository at its pinned commit. Negatives: the same questions asked of
a repository of another domain (a web framework's questions of a serialization library, a
command-line parser's of a web framework...), which mostly cannot answer them. For each, the
search ``context`` makes (``RECALL_K`` chunks, history included) is run and the best vector
similarity among the chunks recalled is kept, with the best question-model probability and the
best raw BM25 score. The table gives, per similarity threshold, how many positives would get
the "no current code clearly matches the query" line (``build.CLEAR_SIMILARITY``) and how many
negatives would; and the spread of the three signals.

Usage::

    .venv/bin/python bench/tune_missing.py --mirrors /work/.mirror [--home DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from question_set import load_questions  # noqa: E402

from freshmark.adapters.lexical.registry import lexical_engine  # noqa: E402
from freshmark.core.config import load_config  # noqa: E402
from freshmark.core.request import DEFAULT_KINDS, SearchRequest  # noqa: E402
from freshmark.core.settings import Settings  # noqa: E402
from freshmark.services.context.build import RECALL_K  # noqa: E402
from freshmark.services.indexing.indexer import IndexRequest, index_repo  # noqa: E402
from freshmark.services.open_branch import embedder_for, open_branch  # noqa: E402
from freshmark.services.retrieval.hybrid import hybrid_search  # noqa: E402

HELDOUT = Path(__file__).resolve().parent / "questions" / "heldout"
# Each repository's questions, and the repository of another domain they are asked of.
ASKED_OF = {
    "koajs/koa": "marshmallow-code/marshmallow",
    "marshmallow-code/marshmallow": "labstack/echo",
    "labstack/echo": "tj/commander.js",
    "tj/commander.js": "encode/starlette",
    "encode/starlette": "spf13/cobra",
    "spf13/cobra": "koajs/koa",
}
THRESHOLDS = (0.26, 0.28, 0.30, 0.32, 0.34, 0.35)


def checked_out(mirrors: Path, work: Path, repo: str, commit: str, settings: Settings) -> Path:
    path = work / repo.replace("/", "+")
    subprocess.run(["git", "clone", "-q", str(mirrors / repo.replace("/", "+") / "repo"),
                    str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "-B", "bench", commit], check=True)
    index_repo(IndexRequest(path), settings=settings, config=load_config(None))
    return path


def signals(path: Path, questions: list, settings: Settings) -> list[dict]:
    opened = open_branch(str(path), settings=settings, config=load_config(None), branch=None,
                         worktree=False, store=None, need_index=True)
    assert opened.index is not None
    embedder = embedder_for(settings, opened.index)
    rows = []
    for question in questions:
        request = SearchRequest(question.question, RECALL_K, DEFAULT_KINDS, include_history=True)
        found, _ = hybrid_search(opened.index, embedder, request,
                                 lexical=lexical_engine(settings))
        rows.append({"id": question.id,
                     "similarity": max((c.vector_sim or 0.0) for c in found),
                     "probability": max((c.score for c in found if c.probability), default=None),
                     "bm25": max((c.bm25 or 0.0) for c in found)})
    return rows


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    at = [ordered[int(p * (len(ordered) - 1))] for p in (0.0, 0.05, 0.5, 0.95, 1.0)]
    return " / ".join(f"{v:.3f}" for v in at)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--home", type=Path, help="freshmark home (default: a new one)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    questions = [q for q in load_questions(HELDOUT) if q.repo in ASKED_OF]
    with tempfile.TemporaryDirectory(prefix="missing-") as scratch:
        import os

        os.environ["FRESHMARK_HOME"] = str(args.home or Path(scratch) / "home")
        settings = Settings.from_env()
        paths = {repo: checked_out(args.mirrors, Path(scratch), repo,
                                   next(q.commit for q in questions if q.repo == repo), settings)
                 for repo in ASKED_OF}
        positives, negatives = [], []
        for repo, other in ASKED_OF.items():
            own = [q for q in questions if q.repo == repo]
            positives += signals(paths[repo], own, settings)
            negatives += signals(paths[other], own, settings)
    print(f"{len(positives)} questions asked of their own repository, {len(negatives)} of "
          "another domain's")
    print("| best similarity below | positives told | negatives told |\n|---|---|---|")
    for threshold in THRESHOLDS:
        told = sum(r["similarity"] < threshold for r in positives)
        caught = sum(r["similarity"] < threshold for r in negatives)
        print(f"| {threshold:.2f} | {told} | {caught} |")
    print("\nspread (min / p05 / median / p95 / max):")
    for name in ("similarity", "probability", "bm25"):
        pos = [r[name] for r in positives if r[name] is not None]
        neg = [r[name] for r in negatives if r[name] is not None]
        print(f"  {name:<11} positives {spread(pos)}; negatives {spread(neg)}")
    if args.json:
        args.json.write_text(json.dumps({"positives": positives, "negatives": negatives},
                                        indent=1))


if __name__ == "__main__":
    main()

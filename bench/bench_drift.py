"""Dependency drift on real history: how often it appears, and whether every claim is true.

Protocol: a public repository's mirror (``/work/.mirror``, fetched) is cloned; its first-parent
commit ``--behind`` commits before the newest is indexed (hashing embedder by default: drift
does not depend on the vectors), the branch is then moved to the newest commit without
re-indexing, and the everyday questions of ``bench/questions/`` for that repository (or
``--queries``) are searched with k=10. Every ``older_identical`` result is counted, with and
without ``drift``.

Check of every claim (an oracle independent of the chunker): for a Python file, the claimed
definition's source is read with the standard library's ``ast`` at the stamp's commit and at
the head; a ``changed`` claim is true when the two differ, a ``vanished`` one when the head has
no such definition. A claim the oracle calls false counts as a false drift.

Usage::

    .venv/bin/python bench/bench_drift.py [--repo psf/requests] [--behind 30,100,300]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_localization import mirror_for

from freshmark.core.config import Config
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.retrieval.search import search

BRANCH = "bench"


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def questions_for(repo: str) -> list[str]:
    name = repo.split("/")[-1]
    path = Path(__file__).parent / "questions" / f"{name}.jsonl"
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line]


def ast_definitions(source: str) -> dict[str, str]:
    """Qualified name (``Class.method``) -> its source, for top-level and class members."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.setdefault(node.name, ast.get_source_segment(source, node) or "")
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    out.setdefault(f"{node.name}.{member.name}",
                                   ast.get_source_segment(source, member) or "")
    return out


def file_at(clone: Path, commit: str, path: str) -> str | None:
    try:
        return git("show", f"{commit}:{path}", cwd=clone)
    except subprocess.CalledProcessError:
        return None


def claim_is_true(clone: Path, stamp: str, head: str, note: dict) -> bool | None:
    """The oracle's word on one claim; None for a file it cannot read (not Python)."""
    if not note["path"].endswith(".py"):
        return None
    old = ast_definitions(file_at(clone, stamp, note["path"]) or "")
    new = ast_definitions(file_at(clone, head, note["path"]) or "")
    if note["symbol"] not in old:
        return None
    if note["change"] == "vanished":
        return note["symbol"] not in new
    return new.get(note["symbol"]) != old[note["symbol"]]


def run_one(mirror: Path, repo: str, behind: int, home: Path) -> dict:
    clone = home / f"clone-{behind}"
    git("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(clone))
    head = git("rev-parse", "HEAD", cwd=clone)
    stamp = git("rev-parse", f"HEAD~{behind}", cwd=clone)
    git("update-ref", f"refs/heads/{BRANCH}", stamp, cwd=clone)
    settings = Settings.from_env()
    index_repo(IndexRequest(clone, branch=BRANCH), settings=settings, config=Config())
    git("update-ref", f"refs/heads/{BRANCH}", head, cwd=clone)
    identical = drifted = claims = true_claims = false_claims = unknown = 0
    started = time.process_time()
    for query in questions_for(repo):
        response = search(SearchRequest.build(query, k=10, branch=BRANCH), str(clone),
                          settings=settings, count=False)
        for result in response.results:
            if str(result.verification.verdict) != "older_identical":
                continue
            identical += 1
            drifted += bool(result.drift)
            for note in result.drift:
                claims += 1
                verdict = claim_is_true(clone, result.record.commit, head, note.to_dict())
                if verdict is None:
                    unknown += 1
                elif verdict:
                    true_claims += 1
                else:
                    false_claims += 1
                    print(f"  false drift: {result.record.path}:{result.record.symbol} -> "
                          f"{note.text()}", file=sys.stderr)
    return {"repo": repo, "behind": behind, "older_identical": identical,
            "with_drift": drifted,
            "drift_share": round(drifted / identical, 4) if identical else None,
            "claims": claims, "true": true_claims, "false": false_claims,
            "not_checked": unknown, "search_cpu_seconds": round(time.process_time() - started, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="psf/requests")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--behind", default="30,100,300",
                        help="comma-separated: how many commits before the newest to index")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    mirror = mirror_for(args.mirrors, args.repo)
    if mirror is None:
        parser.error(f"no mirror of {args.repo} under {args.mirrors} (fetch it first)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        import os

        os.environ.setdefault("FRESHMARK_EMBEDDER", "hashing")
        os.environ["FRESHMARK_HOME"] = str(Path(tmp) / "home")
        for behind in (int(n) for n in args.behind.split(",")):
            rows.append(run_one(mirror, args.repo, behind, Path(tmp)))
    print(f"{'repo':<14} {'behind':>6} {'older_id':>8} {'drift':>6} {'share':>6} "
          f"{'claims':>6} {'true':>5} {'false':>5} {'n/a':>4} {'cpu s':>6}")
    for r in rows:
        share = "-" if r["drift_share"] is None else f"{r['drift_share']:.1%}"
        print(f"{r['repo']:<14} {r['behind']:>6} {r['older_identical']:>8} {r['with_drift']:>6} "
              f"{share:>6} {r['claims']:>6} {r['true']:>5} {r['false']:>5} "
              f"{r['not_checked']:>4} {r['search_cpu_seconds']:>6}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

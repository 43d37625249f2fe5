"""A repository too large to fetch, measured from a release's source archive.

``bench_localization.py`` indexes each issue report's repository at the report's base commit,
which needs the repository's history. Some repositories of the SWE-bench dev set (django,
scikit-learn, matplotlib) are too large for a mirror here, but the package registry holds their
source archives, tests and docs included. This script downloads one release's sdist from PyPI,
commits its tree into a new git repository (one commit, fixed author and date, so the same
archive always gives the same commit) and writes the chosen reports to a JSONL file with that
commit as their base, keeping only reports whose fixed files are in the tree.

It is an approximation, said wherever its figures are reported: the code searched is the
release's, not the base commit's. Choose reports whose base commits come shortly *after* the
release, so that the fix is not in the archive. The dataset holds no dates: reports are chosen
by their instance number, the pull request's number, which grows with the time it was opened
(Django 3.0a1 was uploaded on 2019-09-10, and its reports here are numbered 11790–12130, a
range estimated to start just after it). Files added between the release and a base commit
are missing, and a function the fix changed may differ a little.

Usage::

    .venv/bin/python bench/snapshot_repo.py --package django --version 3.0a1 \\
        --repo django/django --numbers 11790-12130 --out /work/loc/dj
    .venv/bin/python bench/bench_localization.py --mirrors /work/loc/dj/mirrors \\
        --data /work/loc/dj/django-3.0a1.jsonl --systems baseline,hybrid --embedder minilm

The second command is printed by the first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "eval" / "swebench" / "dev.jsonl"
# The registry's simple index in its JSON form (PEP 691): every file of every release.
PYPI_SIMPLE = "https://pypi.org/simple/{package}/"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
TIMEOUT_SECONDS = 120
MAX_ARCHIVE_BYTES = 200 * 1024 * 1024
# Packaging metadata the sdist adds; the repository does not hold it.
NOT_IN_REPOSITORY = ("PKG-INFO",)


def sdist_url(package: str, version: str) -> str:
    request = urllib.request.Request(PYPI_SIMPLE.format(package=package),
                                     headers={"Accept": SIMPLE_JSON})
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
        files = json.load(answer)["files"]
    # Older archives spell the name as the project does (Django-3.0a1), newer ones lowercase.
    wanted = f"{package}-{version}.tar.gz".lower()
    for entry in files:
        if entry["filename"].lower() == wanted:
            return str(entry["url"])
    raise SystemExit(f"{package} {version} has no source archive ({wanted}) on PyPI")


def download(url: str, into: Path) -> Path:
    archive = into / url.rsplit("/", 1)[-1]
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:
        data = answer.read(MAX_ARCHIVE_BYTES + 1)
    if len(data) > MAX_ARCHIVE_BYTES:
        raise SystemExit(f"{url} is over {MAX_ARCHIVE_BYTES} bytes")
    archive.write_bytes(data)
    return archive


def unpack(archive: Path, into: Path) -> Path:
    """The archive's one top-level directory, unpacked under ``into``."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
        tops = {Path(name).parts[0] for name in tar.getnames()}
    if len(tops) != 1:
        raise SystemExit(f"{archive.name} does not hold one top-level directory")
    return into / tops.pop()


def commit_tree(tree: Path, repo: Path) -> str:
    """``tree`` as the one commit of a new repository at ``repo``; its sha."""
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(tree, repo, ignore=shutil.ignore_patterns("*.egg-info", *NOT_IN_REPOSITORY))
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["commit", "-q", "-m", f"source archive {tree.name}"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def in_tree(repo: Path, path: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"HEAD:{path}"], cwd=repo,
                          capture_output=True).returncode == 0


def chosen(rows: list[dict], repo_name: str, numbers: tuple[int, int]) -> list[dict]:
    low, high = numbers
    return [r for r in rows if r["repo"] == repo_name
            and low <= int(r["instance_id"].rsplit("-", 1)[1]) <= high]


def write_reports(rows: list[dict], mirror: Path, commit: str, out: Path) -> tuple[int, int]:
    """``rows`` whose fixed files are all in ``mirror``'s tree, written to ``out`` with
    ``commit`` as their base; (kept, left out)."""
    kept = [row for row in rows if all(in_tree(mirror, p) for p in row["gold_files"])]
    out.write_text("".join(json.dumps({**row, "base_commit": commit}) + "\n" for row in kept))
    return len(kept), len(rows) - len(kept)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True, help="the PyPI name, e.g. django")
    parser.add_argument("--version", required=True, help="the release, e.g. 3.0a1")
    parser.add_argument("--repo", required=True, help="the dataset's owner/name")
    parser.add_argument("--numbers", required=True,
                        help="LOW-HIGH: the reports whose instance number lies in this range")
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    low, _, high = args.numbers.partition("-")
    args.out.mkdir(parents=True, exist_ok=True)
    archive = download(sdist_url(args.package, args.version), args.out)
    tree = unpack(archive, args.out / "unpacked")
    mirror = args.out / "mirrors" / args.repo.replace("/", "+")
    commit = commit_tree(tree, mirror)
    rows = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    data = args.out / f"{args.package}-{args.version}.jsonl"
    kept, dropped = write_reports(chosen(rows, args.repo, (int(low), int(high))), mirror,
                                  commit, data)
    print(f"{args.repo} at {args.package} {args.version} ({commit[:12]}): {kept} reports "
          f"kept, {dropped} whose fixed files are not in the archive left out",
          file=sys.stderr)
    print(f".venv/bin/python bench/bench_localization.py --mirrors {args.out / 'mirrors'} "
          f"--data {data} --systems baseline,hybrid --embedder minilm")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Named JavaScript definitions across real history: is each one found again a commit later?

For each of the last ``--commits`` commits touching a file (default: express's ``lib/request.js``
and ``lib/response.js``), every function unit of the parent's version that is a call argument
(``defineGetter(req, 'host', function host () {})``) or a chained assignment (``res.set =
res.header = function …``) is looked up in the child's version with ``core.locate``, as the
verifier does. The oracle shares no code with the chunker: the unit's statement head (its
signature up to ``function``, whitespace folded) must be on the lines found; a head no longer
in the child's text is ``gone`` when nothing is found.

Usage::

    .venv/bin/python bench/bench_locate_js.py --repo /work/.mirror/expressjs+express/repo
        [--rev a3714473] [--commits 60] [lib/request.js lib/response.js]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from freshmark.core.chunking import Chunk, chunk_text, file_symbols
from freshmark.core.locate import locate
from freshmark.core.stamp import ChunkRecord

DEFAULT_PATHS = ("lib/request.js", "lib/response.js")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                          text=True).stdout


def folded(text: str) -> str:
    return " ".join(text.split())


def statement_head(chunk: Chunk) -> str:
    """``defineGetter(req, 'host',`` or ``res.set = res.header =``; "" for other units."""
    head = chunk.signature.split("function")[0]
    named_here = "(" in head or head.count("=") > 1
    return folded(head) if chunk.kind == "function" and named_here else ""


def check_pair(path: str, old: str, new: str, counts: Counter[str]) -> None:
    symbols = file_symbols(path, new)
    new_lines = new.split("\n")
    for chunk in chunk_text(path, old):
        head = statement_head(chunk)
        if not head:
            continue
        record = ChunkRecord(repo="r", branch="b", commit="c", path=path, symbol=chunk.symbol,
                             start_line=chunk.start_line, end_line=chunk.end_line,
                             indexed_at="", blob_sha="", content_sha256="", kind=chunk.kind,
                             text=chunk.text)
        span = locate(record, symbols)
        if span is None:
            counts["gone" if head not in folded(new) else "missed"] += 1
        else:
            found = folded("\n".join(new_lines[span[0] - 1 : span[1]]))
            counts["found" if head in found else "other lines"] += 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS))
    args = parser.parse_args(argv)
    counts: Counter[str] = Counter()
    for path in args.paths:
        log = git(args.repo, "log", "--format=%H", "-n", str(args.commits), args.rev, "--", path)
        for child in log.split():
            old = git(args.repo, "show", f"{child}^:{path}")
            new = git(args.repo, "show", f"{child}:{path}")
            if old and new:
                counts["pairs"] += 1
                check_pair(path, old, new, counts)
    print(dict(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

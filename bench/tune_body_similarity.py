"""A chunk's whole body read against an issue report, studied offline on saved pools.

The vector channel embeds a chunk's name line and its first 256 tokens, so a long function is
judged by its signature and docstring; the fault a report describes is often deeper. Here the
chunks of a report's two best files are read again in pieces of 40 lines, each with the
chunk's name line, up to 8 (``bench_localization.body_pieces``), and each chunk gets its best
piece's similarity to the report: ``piece_pooled`` against the report's pooled vector (the
vector the search uses), ``piece_max`` against its best window. ``head`` is the chunk
embedded as the index embeds it (a check: it should equal the pool's ``vector_sim``).

It prints where a fix's function stands among its file's candidates by each signal (its rank,
MRR over files that hold one and other chunks), then function Acc@1/5/10 of the chunk answer
with the search's in-file order (``infile.IN_FILE_WEIGHTS``) plus each signal at a few
weights, with ``--whole-file`` also when every chunk of the best files competes for the files'
places, and ``--fit`` an in-file order fitted with each repository held out. The same order
searched online is ``bench_localization.py``'s ``hybrid-body`` system. File answers do
not change: the in-file order keeps each file's places.

Pools come from ``bench_localization.py --dump-pools``; the chunks are read from the mirror at
the report's base commit and embedded with the real model (minutes per 30 reports).

Usage::

    .venv/bin/python bench/tune_body_similarity.py REPORT.json [...] [--mirrors DIR ...]
        [--data FILE ...] [--labels spans|hunks] [--whole-file] [--fit]
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tune_second_pass as study_tools
from bench_localization import best_per_chunk, embed_pieces, scaled, unit_rows

from freshmark.adapters.embedding import get_embedder
from freshmark.core.embed_text import name_line
from freshmark.core.infile import IN_FILE_WEIGHTS, best_files
from freshmark.core.ports import Embedder
from freshmark.core.query import plan_query

SIGNALS = ("head", "piece_pooled", "piece_max")
WEIGHTS = (0.5, 1.0, 2.0, 10.0)
BEST_FILES = 2


@functools.cache
def file_lines(mirror: str, commit: str, path: str) -> tuple[str, ...]:
    shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=mirror, capture_output=True,
                           text=True)
    return tuple(shown.stdout.splitlines()) if shown.returncode == 0 else ()


def chunk_source(study: study_tools.Study, c: dict) -> str:
    lines = file_lines(str(study.mirror), study.row["base_commit"], c["path"])
    return "\n".join(lines[c["start"] - 1:c["end"]])


def add_signals(embedder: Embedder, study: study_tools.Study, chunks: list[dict]) -> None:
    """Sets each of ``SIGNALS`` on ``chunks``, and ``NAME_norm`` scaled to 0..1 over them."""
    if not chunks:
        return
    plan = plan_query(study.row["problem_statement"])
    windows = unit_rows(embedder.embed(plan.windows))
    pooled = unit_rows(np.asarray(plan.window_weights, dtype=np.float32) @ windows)
    sources = [chunk_source(study, c) for c in chunks]
    lines = [name_line(c["path"], c["symbol"]) for c in chunks]
    named = [line + source for line, source in zip(lines, sources, strict=True)]
    head = unit_rows(embedder.embed(named))
    parts, owners = embed_pieces(embedder, list(zip(lines, sources, strict=True)))
    values = {
        "head": head @ pooled,
        "piece_pooled": np.array(best_per_chunk(parts @ pooled, owners, len(chunks))),
        "piece_max": np.array(best_per_chunk((parts @ windows.T).max(axis=1), owners,
                                             len(chunks))),
    }
    for name, column in values.items():
        raw = [float(value) for value in column]
        for c, value, norm in zip(chunks, raw, scaled(raw), strict=True):
            c[name], c[f"{name}_norm"] = value, norm


def in_file_ranks(studies: Sequence[study_tools.Study], fixed: np.ndarray,
                  signals: Sequence[str] = SIGNALS) -> dict[str, list[int]]:
    """Per signal (and BM25, and the search's in-file order), the rank of the first changed
    function among its best file's candidates, over files holding one and other chunks."""
    keys = {name: (lambda c, n=name: c.get(n) or 0.0) for name in (*signals, "bm25")}
    keys["in-file order"] = lambda c: float(study_tools.vector(c) @ fixed)
    ranks: dict[str, list[int]] = {name: [] for name in keys}
    for study in studies:
        for path in best_files([c["path"] for c in study.ranked], BEST_FILES):
            same = [c for c in study.ranked if c["path"] == path]
            gold = [study.is_gold(c) for c in same]
            if not any(gold) or all(gold):
                continue
            for name, key in keys.items():
                order = sorted(same, key=lambda c, key=key: -key(c))
                ranks[name].append(next(i for i, c in enumerate(order) if study.is_gold(c)) + 1)
    return ranks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    study_tools.add_pool_arguments(parser, labels="spans")
    parser.add_argument("--whole-file", action="store_true",
                        help="also read the best files' chunks no channel found, and let them "
                             "compete for the files' places")
    parser.add_argument("--fit", action="store_true",
                        help="fit an in-file order with piece_max, each repository held out")
    args = parser.parse_args()
    embedder = get_embedder("minilm", Path(tempfile.gettempdir()) / "freshmark-study-cache")
    studies = study_tools.load_studies(args.reports, args.mirrors, args.data,
                                       spans=args.labels == "spans")
    for study in studies:
        files = set(best_files([c["path"] for c in study.ranked], BEST_FILES))
        chunks = [c for c in study.ranked if c["path"] in files]
        if args.whole_file:
            chunks += [c for c in study.unfound if c["path"] in files]
        add_signals(embedder, study, chunks)
    check = [abs(c["head"] - c["vector_sim"]) for s in studies for c in s.ranked
             if "head" in c and c.get("vector_sim") is not None]
    print(f"head against the pool's vector_sim: median |difference| {np.median(check):.4f}")
    fixed = np.array([IN_FILE_WEIGHTS.get(name, 0.0) for name in study_tools.FEATURES])
    for name, ranks in in_file_ranks([s for s in studies if s.gold], fixed).items():
        r = np.array(ranks)
        print(f"the changed function in its file by {name}: {len(r)} files, "
              f"MRR {np.mean(1 / r):.3f}, first {np.mean(r == 1):.3f}, top 3 {np.mean(r <= 3):.3f}")
    study_tools.print_accuracy("in-file order of the search:", studies, BEST_FILES, fixed)
    if args.whole_file:
        study_tools.print_accuracy("in-file order of the search, whole file:", studies,
                                   BEST_FILES, fixed, whole_file=True)
    base_features = study_tools.FEATURES
    for name in SIGNALS[1:]:
        study_tools.print_with_signal(f"{name}_norm", WEIGHTS, studies, BEST_FILES,
                                      base_features, fixed, args.whole_file)
    if args.fit:
        study_tools.FEATURES = (*base_features, "piece_max_norm")
        study_tools.print_fitted(studies, list(study_tools.by_repository(studies)), BEST_FILES,
                                 args.whole_file)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

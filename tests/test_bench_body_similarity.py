"""The study of a chunk's whole body read against an issue report: each chunk of a report's
best files is read in pieces, and scored by its best piece, so a fault deep in a long
function is seen where the index's embedding of its head does not reach; offline on saved
pools (``tune_body_similarity``) and online as the localization bench's ``hybrid-body``."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_localization as bl  # noqa: E402
import tune_body_similarity as tbs  # noqa: E402
import tune_second_pass as tsp  # noqa: E402

from freshmark.adapters.embedding.hashing import HashingEmbedder  # noqa: E402

REPORT = ("Reading a table file fails when the header section has lower-case commands: the "
          "reader should accept the header in any case, as the format's own tools do.")
PADDING = "".join(f"    width_{n} = width * {n}\n" for n in range(120))
SOURCE = (
    "def read_header(text):\n    return text.split()\n\n\n"
    "def layout(width):\n" + PADDING +
    "    # reading the header section fails on lower-case commands in a table file\n"
    "    return header_section_commands(lower_case, table_file)\n"
)


def _pooled(symbol: str, start: int, end: int) -> dict:
    """A pool entry as the bench saves it, with the rerank's features."""
    return {"path": "tables/parser.py", "symbol": symbol, "chunk_kind": "function",
            "start": start, "end": end, "references": [], "rrf_norm": 0.5, "bm25_norm": 0.5,
            "vector_norm": 0.5, "symbol_hit": 0.0, "path_hit": 0.0, "length_fit": 1.0,
            "file_norm": 0.0, "path_hint": 0.0, "code_share": 0.0, "kind_prior": 1.0,
            "substance": 0.0, "bm25": 5.0, "vector_sim": 0.3}


def test_a_long_chunk_is_read_in_pieces_of_forty_lines_and_at_most_eight():
    assert len(bl.body_pieces("x\n" * 100)) == 3
    assert bl.body_pieces("x\n" * 100)[0] == "\n".join(["x"] * 40)
    assert len(bl.body_pieces("x\n" * 1000)) == bl.MAX_PIECES
    assert bl.body_pieces("") == [""]


def test_the_chunk_whose_deep_body_matches_the_report_scores_best_by_its_best_piece(make_repo):
    repo = make_repo("tables")
    commit = repo.write("tables/parser.py", SOURCE).commit("parser")
    lines = SOURCE.splitlines()
    layout_start = lines.index("def layout(width):") + 1
    chunks = [_pooled("read_header", 1, 2), _pooled("layout", layout_start, len(lines))]
    pool = {"instance": "tables__tables-1", "gold_files": ["tables/parser.py"],
            "gold_functions": [["tables/parser.py", "layout"]], "candidates": chunks,
            "chunk_candidates": chunks}
    row = {"instance_id": "tables__tables-1", "problem_statement": REPORT,
           "base_commit": commit, "moatless_expected_spans": {"tables/parser.py": ["layout"]}}
    study = tsp.Study(pool, row, repo.path, spans=True)
    scored = [dict(c) for c in chunks]
    tbs.add_signals(HashingEmbedder(), study, scored)
    by_symbol = {c["symbol"]: c for c in scored}
    assert by_symbol["layout"]["piece_max_norm"] == 1.0
    assert by_symbol["read_header"]["piece_max_norm"] == 0.0
    assert by_symbol["layout"]["piece_max"] > by_symbol["layout"]["head"]


def test_the_online_system_reads_a_long_body_to_its_best_piece():
    line = "tables/parser.py layout\n"
    short = ("tables/parser.py read header\n", "def read_header(text):\n    return text.split()")
    deep = (line, "def layout(width):\n" + PADDING + "    # reading the header section fails "
                  "on lower-case commands in a table file\n")
    best = bl.best_piece_similarity(HashingEmbedder(), [REPORT], [short, deep])
    whole = HashingEmbedder().embed([line + deep[1]]) @ HashingEmbedder().embed([REPORT]).T
    assert best[1] > best[0]
    assert best[1] > float(whole[0, 0])


def test_the_online_system_puts_the_search_back_when_it_ends():
    before = (bl.hybrid._Ranking.second_pass, bl.hybrid.in_file_score)
    with bl.body_similarity(True):
        assert bl.hybrid._Ranking.second_pass is not before[0]
        assert bl.hybrid.in_file_score({"piece_max_norm": 1.0}) == bl.BODY_WEIGHT
    assert (bl.hybrid._Ranking.second_pass, bl.hybrid.in_file_score) == before

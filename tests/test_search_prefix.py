"""A ranking that is a prefix: the top k for any k is the first k of the top 100 (the whole
ranking, when it holds fewer), for chunk and file answers alike, because every k ranks the same
candidate pool (issue: agents ask for 1–3 results, and rank 1 must not depend on how many were
asked for). Real code: see ``package_fixtures``."""

from __future__ import annotations

from pathlib import Path

import pytest
from package_fixtures import build_packages

from freshmark.core.request import MAX_K, SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.retrieval.search import search, search_files

QUERIES = [
    "retry a task after failure",
    "connection pool",
    "prompt the user for confirmation",
    "how are environment variables read for options",
    "Context.invoke",
    "release a connection back to the pool",
    "format the help text of a command",
    "exponential backoff",
]
CUTS = (1, 3, 5, 10)


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Settings]:
    return build_packages(tmp_path_factory.mktemp("packages"))


def _chunk_ids(query: str, k: int, repo: Path, settings: Settings) -> list[str]:
    response = search(SearchRequest.build(query, k=k), str(repo), settings=settings, count=False)
    return [r.record.id for r in response.results]


def _file_paths(query: str, k: int, repo: Path, settings: Settings) -> list[str]:
    response = search_files(SearchRequest.build(query, k=k), str(repo), settings=settings,
                            count=False)
    return [f.path for f in response.files]


@pytest.mark.parametrize("query", QUERIES)
def test_top_k_chunks_are_the_first_k_of_the_top_100(packages, query):
    repo, settings = packages
    top = _chunk_ids(query, MAX_K, repo, settings)
    assert len(top) >= max(CUTS)
    for k in CUTS:
        assert _chunk_ids(query, k, repo, settings) == top[:k], f"k={k}"


@pytest.mark.parametrize("query", QUERIES)
def test_top_k_files_are_the_first_k_of_the_top_100(packages, query):
    repo, settings = packages
    top = _file_paths(query, MAX_K, repo, settings)
    assert len(top) >= 5
    for k in CUTS:
        assert _file_paths(query, k, repo, settings) == top[:k], f"k={k}"

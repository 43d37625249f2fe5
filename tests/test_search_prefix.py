"""A ranking that is a prefix: the top k for any k is the first k of the top 100, for chunk and
file answers alike, because every k ranks the same candidate pool (issue: agents ask for 1–3
results, and rank 1 must not depend on how many were asked for).

The repository is real code: click and parts of celery, kombu and redis-py as installed here,
committed to a git repository built in the fixture and indexed with the real indexer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import celery
import click
import kombu
import pytest
import redis
from repo_builder import RepoBuilder

from freshmark.core.config import Config
from freshmark.core.request import MAX_K, SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.retrieval.search import search, search_files

# (package, files inside it); click whole, the others' modules about tasks and connections.
SOURCES = {
    click: None,
    celery: ["app/task.py", "app/autoretry.py", "exceptions.py"],
    kombu: ["connection.py", "pools.py", "resource.py"],
    redis: ["connection.py", "retry.py", "backoff.py"],
}
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
def packages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Settings]]:
    root = tmp_path_factory.mktemp("packages")
    repo = RepoBuilder.init(root / "repo")
    for package, files in SOURCES.items():
        base = Path(package.__file__).parent
        chosen = [base / f for f in files] if files else sorted(base.glob("*.py"))
        for path in chosen:
            repo.write(f"{package.__name__}/{path.relative_to(base)}", path.read_text())
    repo.commit("real packages")
    settings = Settings(home=root / "home", embedder="hashing")
    index_repo(IndexRequest(repo.path), settings=settings, config=Config())
    yield repo.path, settings


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

"""Structure in the ranking on real code (click, celery, kombu, redis-py; ``package_fixtures``):
a name written with its owner finds that member first, not the class outline nor another
class's member of the same name."""

from __future__ import annotations

from pathlib import Path

import pytest
from package_fixtures import build_packages

from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.retrieval.search import search


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Settings]:
    return build_packages(tmp_path_factory.mktemp("packages"))


@pytest.mark.parametrize(("query", "path"), [
    ("Retry.call_with_retry", "redis/retry.py"),
    ("ConnectionPool.get_connection", "redis/connection.py"),
    ("Context.invoke", "click/core.py"),
])
def test_a_method_named_with_its_class_is_the_first_result(packages, query, path):
    repo, settings = packages
    response = search(SearchRequest.build(query, k=1), str(repo), settings=settings, count=False)
    (first,) = response.results
    assert (first.record.path, first.record.symbol) == (path, query)

"""One date meaning on every citation: the version line dates the commit it names (the stamp's
``commit``, or the head for re-read lines), in search and in context alike, never the day the
index was built."""

from __future__ import annotations

from search_fixtures import build_shop

from freshmark.core.request import ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context
from freshmark.services.retrieval.search import search


def test_a_citation_dates_its_commit_in_search_and_in_context_alike(fm_home, make_repo):
    shop = build_shop(make_repo)  # the service's stamp names the initial commit (2026-03-11)
    settings = Settings.from_env()
    found = search(SearchRequest.build("OrderService cancel_order"), str(shop.path),
                   settings=settings).to_dict()["results"]
    cited = next(r for r in found if r["symbol"] == "OrderService.cancel_order")
    version = f"version: main@{shop.initial[:7]} (2026-03-11)"
    assert cited["citation"].splitlines()[1] == version  # not the day it was indexed
    slice_ = build_context(ContextRequest.build("OrderService cancel_order"), str(shop.path),
                           settings=settings)
    assert version in slice_.text().splitlines()

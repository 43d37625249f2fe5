"""A tracked file replaced in the work tree by a symlink out of it (``/etc/passwd``) is refused
on its own result: every other result of the search or context answer is still given."""

from __future__ import annotations

from search_fixtures import PATHS, build_shop, index

from freshmark.core.request import ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context
from freshmark.services.retrieval.search import search

QUERY = "OrderService cancel_order"


def _shop_with_a_symlink_out(make_repo):
    shop = build_shop(make_repo)
    index(shop.path)
    service = shop.repo.path / PATHS["service"]
    service.unlink()
    service.symlink_to("/etc/passwd")
    return shop


def test_worktree_search_labels_only_the_unsafe_file(fm_home, make_repo) -> None:
    shop = _shop_with_a_symlink_out(make_repo)
    response = search(SearchRequest.build(QUERY, k=8, worktree=True), str(shop.path),
                      settings=Settings.from_env())
    by_path: dict[str, list] = {}
    for result in response.results:
        by_path.setdefault(result.record.path, []).append(result.verification)
    refused = by_path.pop(PATHS["service"])
    assert all(str(v.verdict) == "unverifiable" and v.reason.startswith("refused")
               for v in refused)
    assert by_path and not any(v.reason.startswith("refused") for vs in by_path.values()
                               for v in vs)


def test_worktree_context_is_answered_beside_the_unsafe_file(fm_home, make_repo) -> None:
    """A question the refused file matches is answered by the others (a query of the refused
    file's names alone has no evidence left: its [MISSING] line says so)."""
    shop = _shop_with_a_symlink_out(make_repo)
    slice_ = build_context(ContextRequest.build("how is an order cancelled and its refund "
                                                "issued", level="L1", worktree=True),
                           str(shop.path), settings=Settings.from_env())
    sections = slice_.to_dict()["sections"]
    assert any(s["role"] == "evidence" for s in sections)
    assert not any(s["path"] == PATHS["service"] for s in sections)

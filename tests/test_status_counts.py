"""``status`` reads a branch's chunk counts from its manifest, where each index run keeps them
(counted by the lexical index's count queries): no id is listed to count chunks."""

from __future__ import annotations

from typing import Any

import pytest
from repo_builder import RepoBuilder
from test_indexer import records, run, shop_repo
from test_overlay import feature_branch, index_branch, view

from freshmark.adapters.store import collection
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.errors import BranchNotFound
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE, TOMBSTONED
from freshmark.services.upkeep.status import branch_status


def counted(recs: list[Any]) -> dict[str, int]:
    return {"live": sum(r.status == LIVE for r in recs),
            "tombstoned": sum(r.status == TOMBSTONED for r in recs)}


def status(repo: RepoBuilder, branch: str = "main") -> dict[str, Any]:
    settings = Settings.from_env()
    (row,) = branch_status(repo.path, branch, settings=settings, config=Config(),
                           store=Store.open(settings))
    return row


@pytest.fixture
def no_id_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count with a filter lists ids: fail the test if status asks for one."""
    plain = collection.BranchIndex.count

    def count(self: Any, where: dict[str, Any] | None = None) -> int:
        assert where is None, f"status listed ids to count {where}"
        return plain(self, where)

    monkeypatch.setattr(collection.BranchIndex, "count", count)


def test_an_index_run_keeps_the_branch_counts_in_its_manifest(store_env, make_repo) -> None:
    repo = shop_repo(make_repo)
    run(repo)
    repo.delete("src/orders/handlers/cancel_handler.py").commit("drop the handler")
    run(repo)
    recs = records(repo)
    manifest = Store.open(Settings.from_env()).branch(f"path:{repo.path.resolve()}", "main")
    assert manifest is not None
    assert manifest.manifest.chunk_counts == counted(recs)
    assert counted(recs)["tombstoned"] > 0


def test_status_reads_the_counts_without_listing_ids(store_env, make_repo,
                                                     request: pytest.FixtureRequest) -> None:
    repo = shop_repo(make_repo)
    run(repo)
    repo.delete("src/orders/handlers/cancel_handler.py").commit("drop the handler")
    run(repo)
    expected = counted(records(repo))
    request.getfixturevalue("no_id_listing")
    row = status(repo)
    assert (row["live_chunks"], row["tombstoned_chunks"]) == (expected["live"],
                                                              expected["tombstoned"])


def test_an_overlay_counts_the_chunks_the_branch_shows(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    branch = view(repo, "feature")
    assert branch.manifest.chunk_counts == counted(list(branch.iter_records()))
    assert branch.own.count() < branch.manifest.chunk_counts["live"]  # the base's are counted


def test_a_branch_indexed_before_counts_were_kept_is_counted_from_the_store(
    store_env, make_repo
) -> None:
    repo = shop_repo(make_repo)
    run(repo)
    index = Store.open(Settings.from_env()).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None
    manifest = index.reload_manifest()
    manifest.chunk_counts = None
    index.save_manifest(manifest)
    row = status(repo)
    assert {"live": row["live_chunks"], "tombstoned": row["tombstoned_chunks"]} == \
        counted(records(repo))


def test_a_branch_the_repository_does_not_have_is_named_with_the_known_ones(fm_home, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    settings = Settings.from_env()
    with pytest.raises(BranchNotFound, match=r"no branch 'nosuch' in shop; known: main$"):
        branch_status(repo.path, "nosuch", settings=settings, config=Config(),
                      store=Store.open(settings))


def test_a_missing_branch_of_a_clone_named_by_its_parent_is_named_so(fm_home, make_repo):
    # The second clone of a directory name is indexed as ``y/repo``: ``repo`` is the first's.
    for name in ("x/repo", "y/repo"):
        repo = make_repo(name)
        repo.write("src/app.py", "def cancel_order():\n    return 1\n").commit("one")
        run(repo)
    settings = Settings.from_env()
    with pytest.raises(BranchNotFound, match=r"no branch 'nosuch' in y/repo; known: main$"):
        branch_status(repo.path, "nosuch", settings=settings, config=Config(),
                      store=Store.open(settings))

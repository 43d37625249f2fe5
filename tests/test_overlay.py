"""Branch overlays: a branch collection holds what differs from its base, reads see both."""

from __future__ import annotations

import numpy as np
import pytest
from repo_builder import RepoBuilder, git
from test_indexer import DOMAIN_V2, live, run, shop_repo

from freshmark.adapters.embedding.hashing import HashingEmbedder
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.layered import LayeredIndex
from freshmark.core.config import Config, RepoConfig
from freshmark.core.errors import BaseGone, BaseInUse
from freshmark.core.manifest import Manifest
from freshmark.core.overlay import OverlayBase, plan_overlay
from freshmark.core.settings import Settings
from freshmark.core.tree import FileChange
from freshmark.services.upkeep.branches import Retirement, plan_retirements

ORDER = "src/orders/domain/order.py"
HANDLER_PATH = "src/orders/handlers/cancel_handler.py"
SERVICE_PATH = "src/orders/services/order_service.py"


def key(repo: RepoBuilder) -> str:
    return f"path:{repo.path.resolve()}"


def store() -> Store:
    return Store.open(Settings.from_env())


def view(repo: RepoBuilder, branch: str) -> LayeredIndex:
    index = store().branch(key(repo), branch)
    assert isinstance(index, LayeredIndex)
    return index


def own_paths(repo: RepoBuilder, branch: str) -> set[str]:
    own = store().own_branch(key(repo), branch)
    assert own is not None
    return own.paths()


def feature_branch(make_repo, name: str = "feature") -> RepoBuilder:
    """The shop indexed on main, and ``name`` branched from it with one file changed."""
    repo = shop_repo(make_repo)
    run(repo)
    repo.branch(name).checkout(name)
    repo.write(ORDER, DOMAIN_V2).commit("feature change")
    return repo


def index_branch(repo: RepoBuilder, name: str = "feature", base: str = "main") -> dict:
    return run(repo, branch=name, base_branch=base)


# -- the plan (pure) ---------------------------------------------------------------------------
def change(status: str, old: str | None, new: str | None) -> FileChange:
    return FileChange(status, old, new, "a" if old else None, "b" if new else None)


def test_plan_takes_every_differing_path_the_overlay_does_not_hold_yet() -> None:
    plan = plan_overlay([change("modified", "a.py", "a.py")], held_paths=[],
                        changed_on_branch=set(), present_at_head=set())
    assert [c.new_path for c in plan.changes] == ["a.py"] and plan.purge_paths == []


def test_plan_leaves_a_held_path_the_branch_did_not_change() -> None:
    plan = plan_overlay([change("modified", "a.py", "a.py")], held_paths=["a.py"],
                        changed_on_branch={"b.py"}, present_at_head=set())
    assert plan.changes == []


def test_plan_replans_every_differing_path_when_the_last_head_is_unknown() -> None:
    plan = plan_overlay([change("modified", "a.py", "a.py")], held_paths=["a.py"],
                        changed_on_branch=None, present_at_head=set())
    assert len(plan.changes) == 1


def test_plan_purges_a_held_path_that_matches_the_base_again() -> None:
    plan = plan_overlay([], held_paths=["a.py"], changed_on_branch={"a.py"},
                        present_at_head={"a.py"})
    assert plan.purge_paths == ["a.py"]


def test_plan_keeps_the_history_of_a_file_both_sides_lack() -> None:
    plan = plan_overlay([], held_paths=["gone.py"], changed_on_branch=set(), present_at_head=set())
    assert plan.purge_paths == [] and plan.changes == []


def test_plan_tombstones_a_branch_only_file_the_branch_just_deleted() -> None:
    plan = plan_overlay([], held_paths=["spike.py"], changed_on_branch={"spike.py"},
                        present_at_head=set())
    assert [(c.status, c.old_path) for c in plan.changes] == [("deleted", "spike.py")]


def test_plan_counts_both_sides_of_a_rename_as_differing() -> None:
    plan = plan_overlay([change("renamed", "old.py", "new.py")], held_paths=["old.py", "x.py"],
                        changed_on_branch=set(), present_at_head={"x.py"})
    assert len(plan.changes) == 1 and plan.purge_paths == ["x.py"]


# -- an overlay holds only its diff ------------------------------------------------------------
def test_overlay_collection_holds_only_the_changed_file(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    summary = index_branch(repo)
    assert own_paths(repo, "feature") == {ORDER}
    base_chunks = len(store().branch(key(repo), "main").get(where={"path": ORDER}))
    assert summary["overlay_chunks"] <= 2 * base_chunks
    assert summary["embeddings_computed"] == 1


def test_overlay_manifest_names_its_base(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    main_head = git(repo.path, "rev-parse", "main")
    index_branch(repo)
    base = OverlayBase.of(view(repo, "feature").manifest)
    assert base is not None and base.branch == "main" and base.repo_key == key(repo)
    assert base.layered_on == {"default": main_head} and base.forked_from == main_head
    assert base.collection == store().own_branch(key(repo), "main").name


def test_reads_see_the_branch_file_and_the_base_files(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    records = list(view(repo, "feature").iter_records())
    current = live(records)
    assert "delivered" in current[(ORDER, "ensure_cancellable")].text
    assert current[(HANDLER_PATH, "CancelOrderHandler.handle")].branch == "main"
    live_ids = [r.id for r in records if r.status == "live"]
    assert len(live_ids) == len(set(live_ids))  # the base's chunks of the file are shadowed


def test_count_equals_the_visible_records(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    repo.delete(HANDLER_PATH).commit("drop the handler")
    index_branch(repo)
    layered = view(repo, "feature")
    records = list(layered.iter_records())
    assert layered.count() == len(records)
    assert layered.count({"status": "live"}) == sum(r.status == "live" for r in records)


def test_vector_query_never_returns_a_shadowed_base_chunk(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    layered = view(repo, "feature")
    vector = np.asarray(HashingEmbedder().embed_query("ensure cancellable order"))
    hits = layered.query(vector, 50)
    ids = [r.id for r, _ in hits]
    assert len(ids) == len(set(ids))
    order_hits = [r for r, _ in hits if r.path == ORDER and r.status == "live"]
    assert order_hits and all(r.branch == "feature" for r in order_hits)
    distances = [d for _, d in hits]
    assert distances == sorted(distances)


def test_a_file_deleted_on_the_branch_is_historical_there_only(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    repo.delete(HANDLER_PATH).commit("drop the handler")
    index_branch(repo)
    records = [r for r in view(repo, "feature").iter_records() if r.path == HANDLER_PATH]
    assert records and all(r.status == "tombstoned" for r in records)
    assert all(r.tombstoned_in == repo.head() for r in records)
    assert (HANDLER_PATH, "CancelOrderHandler.handle") in live(list(
        store().branch(key(repo), "main").iter_records()))


def test_a_rename_on_the_branch_names_its_successor(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    repo.rename(HANDLER_PATH, "src/orders/handlers/cancel.py").commit("rename")
    index_branch(repo)
    old = [r for r in view(repo, "feature").iter_records() if r.path == HANDLER_PATH]
    assert old and {r.successor for r in old} == {"src/orders/handlers/cancel.py"}
    assert own_paths(repo, "feature") == {ORDER, HANDLER_PATH, "src/orders/handlers/cancel.py"}


def test_a_second_run_on_the_branch_only_adds_its_new_change(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    repo.write("src/orders/new.py", "def fresh():\n    return 1\n").commit("new file")
    summary = index_branch(repo)
    assert summary["files_changed"] == 1 and summary["embeddings_computed"] == 1
    assert own_paths(repo, "feature") == {ORDER, "src/orders/new.py"}


def test_a_noop_run_on_an_overlay_changes_nothing(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    summary = index_branch(repo)
    assert summary["noop"] and summary["embeddings_computed"] == 0


# -- when the base moves -----------------------------------------------------------------------
def move_base(repo: RepoBuilder) -> None:
    """main changes a file the feature branch did not touch, and is indexed again."""
    repo.checkout("main")
    repo.write(SERVICE_PATH, "class OrderService:\n    def refund(self):\n        return 'r'\n")
    repo.commit("base change")
    run(repo)
    repo.checkout("feature")


def test_base_change_the_branch_lacks_is_held_by_the_overlay(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    move_base(repo)
    index_branch(repo)
    assert SERVICE_PATH in own_paths(repo, "feature")
    service = live([r for r in view(repo, "feature").iter_records() if r.path == SERVICE_PATH])
    assert not any("refund" in r.text for r in service.values())
    assert all(r.branch == "feature" for r in service.values())


def test_merging_the_base_lets_the_base_serve_the_file_again(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    move_base(repo)
    index_branch(repo)
    git(repo.path, "merge", "-q", "--no-edit", "main")
    summary = index_branch(repo)
    assert SERVICE_PATH not in own_paths(repo, "feature")
    assert summary["chunks_purged"] > 0
    service = live([r for r in view(repo, "feature").iter_records() if r.path == SERVICE_PATH])
    assert any("refund" in r.text for r in service.values())
    merged = view(repo, "feature").manifest
    assert merged.purged_generation == merged.generation


def test_a_change_reverted_on_the_branch_leaves_the_overlay(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    repo.write(ORDER, git(repo.path, "show", f"main:{ORDER}") + "\n").commit("revert")
    git(repo.path, "checkout", "-q", "main", "--", ORDER)
    repo.commit("revert exactly")
    index_branch(repo)
    assert own_paths(repo, "feature") == set()


def test_a_file_the_branch_added_and_deleted_stays_in_its_history(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    repo.write("src/spike.py", "def spike():\n    return 0\n").commit("spike")
    index_branch(repo)
    repo.delete("src/spike.py").commit("drop spike")
    index_branch(repo)
    move_base(repo)
    index_branch(repo)
    spike = [r for r in view(repo, "feature").iter_records() if r.path == "src/spike.py"]
    assert spike and all(r.status == "tombstoned" for r in spike)


# -- chains, deletion and a vanished base ------------------------------------------------------
def test_a_branch_of_a_branch_reads_through_both(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    repo.branch("sub").checkout("sub")
    repo.write("src/sub.py", "def sub():\n    return 's'\n").commit("sub change")
    summary = index_branch(repo, "sub", base="feature")
    assert summary["layered_on"] == "feature" and own_paths(repo, "sub") == {"src/sub.py"}
    layered = view(repo, "sub")
    assert layered.depth == 2
    current = live(list(layered.iter_records()))
    assert "delivered" in current[(ORDER, "ensure_cancellable")].text
    assert ("src/sub.py", "sub") in current and (HANDLER_PATH, "CancelOrderHandler") in current


def test_a_base_with_overlays_cannot_be_dropped(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    with pytest.raises(BaseInUse, match="feature"):
        store().drop_branch(key(repo), "main")
    assert store().drop_branch(key(repo), "feature")
    assert store().drop_branch(key(repo), "main")


def test_an_overlay_whose_base_vanished_says_so(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    store().drop_branch(key(repo), "main", force=True)
    with pytest.raises(BaseGone, match="no longer indexed"):
        store().branch(key(repo), "feature")


def test_an_overlay_whose_base_vanished_is_indexed_whole_again(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    store().drop_branch(key(repo), "main", force=True)
    summary = index_branch(repo)
    index = store().branch(key(repo), "feature")
    assert not isinstance(index, LayeredIndex) and summary["layered_on"] is None
    assert HANDLER_PATH in index.paths() and ORDER in index.paths()


def test_a_branch_is_never_layered_on_itself_through_a_chain(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    store().drop_branch(key(repo), "feature")
    repo.branch("sub").checkout("sub")
    index_branch(repo, "sub", base="feature")  # feature is gone: sub is layered on nothing
    summary = index_branch(repo, "feature", base="sub")
    assert summary["layered_on"] == "sub"
    assert view(repo, "feature").depth == 1


# -- retirement --------------------------------------------------------------------------------
def manifest(branch: str, base: str | None = None) -> Manifest:
    overlay = {"repo_key": "id:shop", "branch": base, "layered_on": {}} if base else None
    return Manifest(repo="shop", repo_key="id:shop", branch=branch, embedder="e",
                    collection=f"c-{branch}", overlay=overlay, last_used_at="2020-01-01T00:00:00Z")


SHOP = RepoConfig(id="shop", url="file:///x", branches=("main",))


def test_retirement_keeps_a_base_whose_overlay_stays() -> None:
    manifests = [manifest("old"), manifest("new", base="old")]
    config = Config(repos=(SHOP,), branch_idle_seconds=10)
    requested = {"shop:new": 1e12}
    plan = plan_retirements(manifests, config, {"shop": None}, requested, now=1e12)
    assert plan == []


def test_retirement_drops_overlays_before_their_base() -> None:
    manifests = [manifest("a"), manifest("b", base="a"), manifest("c", base="b")]
    config = Config(repos=(SHOP,), branch_idle_seconds=10)
    plan = plan_retirements(manifests, config, {"shop": {"main": "x"}}, {}, now=1e12)
    assert [r.branch for r in plan] == ["c", "b", "a"]
    assert all(isinstance(r, Retirement) and r.reason == "deleted" for r in plan)


# -- status and audit --------------------------------------------------------------------------
def test_status_shows_the_overlay_base_and_size(store_env, make_repo) -> None:
    from freshmark.services.upkeep.status import branch_status

    repo = feature_branch(make_repo)
    summary = index_branch(repo)
    [row] = branch_status(repo.path, "feature", settings=Settings.from_env(), config=Config(),
                          store=store())
    overlay = row["overlay"]
    assert overlay["base_branch"] == "main" and overlay["own_paths"] == 1
    assert overlay["own_chunks"] == summary["overlay_chunks"] and not overlay["base_missing"]


def test_status_reports_an_overlay_whose_base_vanished(store_env, make_repo) -> None:
    from freshmark.services.upkeep.status import branch_status

    repo = feature_branch(make_repo)
    index_branch(repo)
    store().drop_branch(key(repo), "main", force=True)
    [row] = branch_status(repo.path, None, settings=Settings.from_env(), config=Config(),
                          store=store())
    assert row["branch"] == "feature" and row["overlay"]["base_missing"]


def test_audit_counts_base_chunks_the_branch_lacks_as_stale(store_env, make_repo) -> None:
    from freshmark.services.upkeep.audit import audit

    repo = feature_branch(make_repo)
    index_branch(repo)
    before = audit(Settings.from_env(), Config(), target=str(repo.path), branch="feature")
    assert [r.stale_chunks for r in before.rows] == [0]
    move_base(repo)  # main now serves its new OrderService, which the branch does not have
    after = audit(Settings.from_env(), Config(), target=str(repo.path), branch="feature")
    assert after.rows[0].stale_chunks > 0
    assert after.overlays[(after.rows[0].repo, "feature")]["base_branch"] == "main"


def test_reads_from_the_process_cache_match_reads_from_the_store(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    repo.write("src/orders/new.py", "def fresh(order):\n    return order.cancel()\n")
    repo.commit("another file")
    index_branch(repo)
    cached, direct = view(repo, "feature"), view(repo, "feature")
    direct.cached_reads = False
    vector = np.asarray(HashingEmbedder().embed_query("cancel the order"))
    for n in (1, 5, 40):
        got = [(r.id, round(d, 4)) for r, d in cached.query(vector, n)]
        assert got == [(r.id, round(d, 4)) for r, d in direct.query(vector, n)]
    ids = [r.id for r in direct.iter_records()]
    assert {r.id for r in cached.get(ids=ids)} == set(ids)
    assert sorted(cached.embeddings_for(ids)) == sorted(direct.embeddings_for(ids))
    assert {r.id for r in cached.records_for_paths([ORDER, HANDLER_PATH])} == \
        {r.id for r in direct.records_for_paths([ORDER, HANDLER_PATH])}


def test_status_says_when_the_base_was_indexed_again_since_the_overlay_was_layered(
        store_env, make_repo) -> None:
    from freshmark.services.upkeep.status import branch_status

    repo = feature_branch(make_repo)
    index_branch(repo)
    repo.checkout("main")
    repo.write("src/orders/notes.py", "def note():\n    return 1\n").commit("main moves")
    run(repo)  # the base is indexed again; the overlay is not
    [row] = branch_status(repo.path, "feature", settings=Settings.from_env(), config=Config(),
                          store=store())
    assert row["overlay"]["base_moved"] == ["default"]
    index_branch(repo)
    [row] = branch_status(repo.path, "feature", settings=Settings.from_env(), config=Config(),
                          store=store())
    assert row["overlay"]["base_moved"] == []

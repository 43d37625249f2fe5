"""The stamped per-branch index, against the embedded store and a real Chroma server."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from repo_builder import RepoBuilder, git

from freshmark.adapters.embedding.hashing import HashingEmbedder
from freshmark.adapters.git.repo import GitRepo, ObjectNotFound
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import ClassifyRules, Config, load_config
from freshmark.core.errors import EmbedderMismatch, RetryableError
from freshmark.core.settings import Settings
from freshmark.core.stamp import MANDATORY_FIELDS, ChunkRecord
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.indexing.summary import IndexSummary

SERVICE_V1 = '''"""Order services."""
from orders.domain import ensure_cancellable


class OrderService:
    """Application service for orders."""

    def cancel_order(self, order_id: str) -> None:
        """Cancel an order; a second cancel returns the first result."""
        order = self.repo.get(order_id)
        ensure_cancellable(order)
        order.cancel()

    def place_order(self, items: list) -> str:
        return self.repo.add(items)
'''

DOMAIN_V1 = """def ensure_cancellable(order) -> None:
    if order.shipped:
        raise ValueError("shipped orders cannot be cancelled")
"""

DOMAIN_V2 = """def ensure_cancellable(order) -> None:
    if order.shipped or order.delivered:
        raise ValueError("shipped or delivered orders cannot be cancelled")
"""

HANDLER = '''class CancelOrderHandler:
    """Idempotent cancel: repeated requests return the previous result."""

    def handle(self, command):
        key = command.idempotency_key
        if key in self.seen:
            return self.seen[key]
        self.seen[key] = self.service.cancel_order(command.order_id)
        return self.seen[key]
'''

GO_PAYMENT = """package payment

// Payment is a captured card payment.
type Payment struct {
	Amount int
}

// Refund gives money back.
func (p *Payment) Refund(amount int) error {
	p.Amount -= amount
	return nil
}
"""


def shop_repo(make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write("src/orders/services/order_service.py", SERVICE_V1)
    repo.write("src/orders/domain/order.py", DOMAIN_V1)
    repo.write("src/orders/handlers/cancel_handler.py", HANDLER)
    repo.write("src/payment/payment.go", GO_PAYMENT)
    repo.write("README.md", "# shop\n\nOrders and payments.\n")
    repo.commit("initial", when="2026-03-11T10:00:00Z")
    return repo


class DyingEmbedder(HashingEmbedder):
    """The test tier's embedder, failing (as a lost model server would) after some batches."""

    def __init__(self, batches_before_death: int) -> None:
        super().__init__()
        self.batches_left = batches_before_death

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if self.batches_left <= 0:
            raise RetryableError("embedder went away")
        self.batches_left -= 1
        return super().embed(texts)


REQUEST_FIELDS = {f.name for f in fields(IndexRequest)} - {"repo_path"}


def run(repo: RepoBuilder, **kwargs) -> dict:
    settings = Settings.from_env()
    config = kwargs.pop("config", Config())
    asked = {name: kwargs.pop(name) for name in list(kwargs) if name in REQUEST_FIELDS}
    return index_repo(IndexRequest(repo.path, **asked), settings=settings, config=config,
                      **kwargs).to_dict()


def records(repo: RepoBuilder, branch: str = "main") -> list[ChunkRecord]:
    store = Store.open(Settings.from_env())
    index = store.branch(f"path:{repo.path.resolve()}", branch)
    assert index is not None
    return list(index.iter_records())


def live(recs: list[ChunkRecord]) -> dict[tuple[str, str], ChunkRecord]:
    return {(r.path, r.symbol): r for r in recs if r.status == "live"}


def test_first_index_stamps_every_mandatory_field(store_env, make_repo):
    repo = shop_repo(make_repo)
    summary = run(repo)
    recs = records(repo)
    assert summary["chunks_added"] == len(recs) > 0
    for record in recs:
        stamp = record.stamp()
        assert all(stamp[name] not in (None, "") for name in MANDATORY_FIELDS), stamp
        assert record.commit == repo.head() and record.branch == "main"
    symbols = {r.symbol for r in recs}
    assert {"OrderService.cancel_order", "ensure_cancellable", "Payment.Refund"} <= symbols


def test_reindex_without_changes_is_a_noop(store_env, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    again = run(repo)
    assert again["noop"] is True
    assert again["embeddings_computed"] == 0 and again["chunks_added"] == 0


def test_changed_file_reembeds_only_changed_chunks(store_env, make_repo):
    repo = shop_repo(make_repo)
    first = run(repo)
    before = live(records(repo))
    repo.write("src/orders/domain/order.py", DOMAIN_V2).commit("deliveries too")
    second = run(repo)
    after = live(records(repo))
    assert second["files_changed"] == 1
    assert second["embeddings_computed"] == second["chunks_updated"] == 1
    service = ("src/orders/services/order_service.py", "OrderService.cancel_order")
    assert after[service].commit == before[service].commit == first["commit"]
    domain = after[("src/orders/domain/order.py", "ensure_cancellable")]
    assert domain.commit == repo.head() and "delivered" in domain.text


def test_deleted_file_is_tombstoned_not_dropped(store_env, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    count_before = len(records(repo))
    repo.delete("src/orders/handlers/cancel_handler.py")
    head = repo.commit("drop the handler")
    summary = run(repo)
    recs = records(repo)
    handler = [r for r in recs if r.path.endswith("cancel_handler.py")]
    assert len(recs) == count_before
    assert handler and all(r.status == "tombstoned" for r in handler)
    assert all(r.tombstoned_in == head and r.tombstoned_at for r in handler)
    assert summary["chunks_tombstoned"] == len(handler)


def test_rename_tombstones_old_path_with_successor_and_reuses_vectors(store_env, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    repo.rename("src/payment/payment.go", "src/billing/payment.go").commit("move payment")
    summary = run(repo)
    recs = records(repo)
    old = [r for r in recs if r.path == "src/payment/payment.go"]
    new = [r for r in recs if r.path == "src/billing/payment.go"]
    assert old and all(
        r.status == "tombstoned" and r.successor == "src/billing/payment.go" for r in old
    )
    assert new and all(r.status == "live" for r in new)
    assert summary["embeddings_computed"] == 0


def test_path_renamed_away_and_replaced_by_a_symlink_in_one_commit(fm_home, make_repo):
    # Seen in astropy's history: CITATION moved to astropy/CITATION and a symlink took its place.
    repo = make_repo("cite")
    repo.write("CITATION", "Cite this project as follows.\n\nThe paper, 2018.\n")
    repo.commit("cite")
    run(repo)
    repo.rename("CITATION", "pkg/CITATION")
    (repo.path / "CITATION").symlink_to("pkg/CITATION")
    repo.commit("move citation, keep a link")
    run(repo)
    by_path = {}
    for record in records(repo):
        by_path.setdefault(record.path, []).append(record)
    assert by_path["pkg/CITATION"] and all(r.status == "live" for r in by_path["pkg/CITATION"])
    assert all(r.status == "tombstoned" for r in by_path["CITATION"])


def test_path_renamed_away_and_rewritten_in_one_commit_stays_live(fm_home, make_repo):
    repo = make_repo("swap")
    repo.write("tool.py", "def old_tool():\n    return 1\n").commit("tool")
    run(repo)
    repo.rename("tool.py", "legacy/tool.py")
    repo.write("tool.py", "def old_tool():\n    return 2\n").commit("new tool, old one kept")
    run(repo)
    live = [r for r in records(repo) if r.path == "tool.py" and r.status == "live"]
    assert [r.symbol for r in live] == ["old_tool"] and "return 2" in live[0].text


def test_removed_symbol_in_kept_file_is_tombstoned(store_env, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    without_place = SERVICE_V1.split("    def place_order")[0]
    repo.write("src/orders/services/order_service.py", without_place).commit("drop place_order")
    run(repo)
    recs = {(r.path, r.symbol): r for r in records(repo)}
    gone = recs[("src/orders/services/order_service.py", "OrderService.place_order")]
    assert gone.status == "tombstoned" and gone.tombstoned_in == repo.head()
    kept = recs[("src/orders/services/order_service.py", "OrderService.cancel_order")]
    assert kept.status == "live"


def index_then_rewrite_history(repo: RepoBuilder) -> None:
    """Index a commit adding extra.py, then replace it by one adding other.py (a force push)."""
    base = repo.head()
    repo.write("src/orders/extra.py", "def extra():\n    return 1\n").commit("extra")
    run(repo)
    repo.reset_hard(base)
    repo.write("src/orders/other.py", "def other():\n    return 2\n").commit("rewritten")


def test_force_pushed_history_is_diffed_from_the_indexed_commit(store_env, make_repo):
    repo = shop_repo(make_repo)
    index_then_rewrite_history(repo)
    run(repo)
    now = live(records(repo))
    assert ("src/orders/other.py", "other") in now
    assert ("src/orders/extra.py", "extra") not in now


def test_rerun_after_failed_run_finishes_without_duplicates(store_env, make_repo):
    config = Config(rules=ClassifyRules(batch_files=8))  # several batches, so several writes
    repo = shop_repo(make_repo)
    first = run(repo, config=config)
    for i in range(30):
        repo.write(f"src/gen/mod{i}.py", f"def f{i}(x):\n    return x + {i}\n")
    repo.write("src/gen/zlast.py", "def last():\n    return 'last'\n")
    repo.commit("many files")
    # The embedder dies after its first batch: the run fails part-way, after some writes.
    with pytest.raises(RetryableError):
        run(repo, config=config, embedder=DyingEmbedder(batches_before_death=1))
    store = Store.open(Settings.from_env())
    manifest = store.branch(f"path:{repo.path.resolve()}", "main").manifest
    assert manifest.commit == first["commit"]  # the previous stamp is still true
    run(repo, config=config)
    recs = records(repo)
    ids = [r.id for r in recs]
    assert len(ids) == len(set(ids))
    assert ("src/gen/zlast.py", "last") in live(recs)
    assert store.branch(f"path:{repo.path.resolve()}", "main").manifest.commit == repo.head()


def test_branch_seeded_from_base_embeds_only_its_diff(store_env, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    repo.branch("feature/idempotency").checkout("feature/idempotency")
    repo.write("src/orders/domain/order.py", DOMAIN_V2).commit("feature change")
    summary = run(repo, branch="feature/idempotency", base_branch="main")
    assert summary["layered_on"] == "main"
    assert summary["embeddings_computed"] == 1
    feature = live(records(repo, "feature/idempotency"))
    changed = feature[("src/orders/domain/order.py", "ensure_cancellable")]
    assert changed.branch == "feature/idempotency" and "delivered" in changed.text
    # Files the branch did not change are read from the base, stamped where they were indexed.
    assert feature[("src/orders/handlers/cancel_handler.py", "CancelOrderHandler")].branch == "main"
    main = live(records(repo, "main"))
    assert "delivered" not in main[("src/orders/domain/order.py", "ensure_cancellable")].text


@pytest.mark.parametrize("branch", ["feature/x", "fix/ünïcode-枝", "b" * 200])
def test_odd_branch_names_get_their_own_collection(fm_home, make_repo, branch):
    repo = shop_repo(make_repo)
    repo.branch(branch)
    summary = run(repo, branch=branch)
    assert summary["chunks_added"] > 0
    assert {r.branch for r in records(repo, branch)} == {branch}


def test_layer_run_stamps_only_its_layer(fm_home, make_repo, tmp_path):
    repo = shop_repo(make_repo)
    config_file = tmp_path / "freshmark.toml"
    config_file.write_text(
        '[[layers]]\nname = "hot"\nglobs = ["src/orders/**"]\ninterval_seconds = 60\n'
        '[[layers]]\nname = "infra"\nglobs = ["**"]\ninterval_seconds = 86400\n'
    )
    config = load_config(config_file)
    first = run(repo, config=config)
    repo.write("src/orders/domain/order.py", DOMAIN_V2)
    repo.write("README.md", "# shop\n\nchanged\n").commit("both layers")
    summary = run(repo, config=config, layer="hot")
    store = Store.open(Settings.from_env())
    manifest = store.branch(f"path:{repo.path.resolve()}", "main").manifest
    assert summary["layers"] == ["hot"] and summary["files_changed"] == 1
    assert manifest.layers["hot"]["commit"] == repo.head()
    assert manifest.layers["infra"]["commit"] == first["commit"]
    assert manifest.commit == first["commit"]  # the branch is only as fresh as its stalest layer
    by_layer = {r.path: r.layer for r in records(repo)}
    assert by_layer["src/orders/domain/order.py"] == "hot" and by_layer["README.md"] == "infra"


def test_collection_refuses_a_second_embedder(fm_home, make_repo, monkeypatch):
    repo = shop_repo(make_repo)
    run(repo)

    class OtherEmbedder:
        id = "other-model/v1"
        dim = 8

    with pytest.raises(EmbedderMismatch):
        index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config(),
                   embedder=OtherEmbedder())  # type: ignore[arg-type]


def test_stale_target_never_moves_the_stamp_backwards(fm_home, make_repo):
    repo = shop_repo(make_repo)
    old = repo.head()
    repo.write("src/orders/domain/order.py", DOMAIN_V2).commit("newer")
    run(repo)
    late = run(repo, target=old)
    store = Store.open(Settings.from_env())
    assert store.branch(f"path:{repo.path.resolve()}", "main").manifest.commit == repo.head()
    assert late["noop"] is True


def test_an_empty_file_is_counted_as_skipped_empty(fm_home, make_repo):
    repo = shop_repo(make_repo)
    repo.write("src/shop/__init__.py", "").write("docs/blank.md", "\n\n  \n").commit("empty")
    summary = run(repo)
    assert summary["files_skipped"].get("empty") == 2
    assert summary["files_seen"] == summary["files_changed"] + sum(
        summary["files_skipped"].values())


def test_unindexable_files_are_skipped_and_counted(fm_home, make_repo):
    repo = shop_repo(make_repo)
    repo.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    repo.write("vendor/lib/dep.py", "def dep():\n    pass\n")
    repo.write("data/huge.txt", "x = 1\n" * 400_000)
    repo.write("src/latin1.py", "s = 'caf\xe9'\n".encode("latin-1"))
    (repo.path / "src" / "link.py").symlink_to("/etc/passwd")
    repo.commit("odd files")
    summary = run(repo)
    skipped = summary["files_skipped"]
    assert skipped.get("binary") == 1 and skipped.get("oversized") == 1
    assert skipped.get("vendored") == 1 and skipped.get("symlink") == 1
    paths = {r.path for r in records(repo)}
    assert "src/latin1.py" in paths and "src/link.py" not in paths


def test_generated_backup_and_fixture_files_are_indexed_with_their_kind(fm_home, make_repo):
    repo = shop_repo(make_repo)
    repo.write(
        "src/orders/generated/order_api_client.py",
        "# Code generated by openapi-gen. DO NOT EDIT.\nclass OrderApiClient:\n"
        "    def cancel(self, order_id):\n        return self.post(order_id)\n",
    )
    repo.write(
        "src/orders/repositories/order_repo_old.py",
        "class OrderRepoOld:\n    def save(self, order):\n        pass\n",
    )
    repo.write("tests/fixtures/orders.py", "ORDERS = [1, 2, 3]\n").commit("noise")
    run(repo)
    kinds = {r.path: r.file_kind for r in records(repo)}
    assert kinds["src/orders/generated/order_api_client.py"] == "generated"
    assert kinds["src/orders/repositories/order_repo_old.py"] == "backup"
    assert kinds["tests/fixtures/orders.py"] == "fixture"


def test_an_expected_output_under_tests_is_a_fixture_beside_its_test(fm_home, make_repo):
    repo = shop_repo(make_repo)
    repo.write("tests/output/chained.txt",
               "Traceback (most recent call last):\n  File \"a.py\", line 1\n"
               "ValueError: bad\n")
    repo.write("tests/test_output.py", "def test_chained():\n    assert True\n")
    repo.commit("expected output")
    run(repo)
    kinds = {r.path: r.file_kind for r in records(repo)}
    assert kinds["tests/output/chained.txt"] == "fixture"
    assert kinds["tests/test_output.py"] == "test"


def test_chunks_of_unchanged_files_keep_their_vectors_across_branches(fm_home, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    repo.branch("other")
    summary = run(repo, branch="other")  # no base: full index, but every vector is cached
    assert summary["embeddings_computed"] == 0 and summary["embeddings_reused"] > 0


def test_store_directory_not_writable_is_a_clear_error(tmp_path, monkeypatch, make_repo):
    from freshmark.core.errors import StoreNotWritable

    repo = shop_repo(make_repo)
    home = tmp_path / "readonly-home"
    (home / "chroma").mkdir(parents=True)
    (home / "chroma").chmod(0o500)
    monkeypatch.setenv("FRESHMARK_HOME", str(home))
    monkeypatch.setenv("FRESHMARK_EMBEDDER", "hashing")
    if Path("/proc/self").exists() and __import__("os").geteuid() == 0:
        # root ignores directory modes; a path under a regular file is unwritable for anyone
        blocker = tmp_path / "file-not-dir"
        blocker.write_text("x")
        monkeypatch.setenv("FRESHMARK_HOME", str(blocker / "home"))
    with pytest.raises(StoreNotWritable):
        run(repo)


def test_an_oversized_blob_is_skipped_without_being_read(fm_home, make_repo, monkeypatch):
    repo = shop_repo(make_repo)
    repo.write("data/huge.txt", "x = 1\n" * 400_000)  # 2.4 MB, over the 1 MiB default
    repo.commit("huge file")
    huge = git(repo.path, "rev-parse", "HEAD:data/huge.txt")
    read: list[str] = []
    original = GitRepo.read_blob

    def recording(self: GitRepo, blob_sha: str) -> bytes:
        read.append(blob_sha)
        return original(self, blob_sha)

    monkeypatch.setattr(GitRepo, "read_blob", recording)
    summary = run(repo)
    assert summary["files_skipped"].get("oversized") == 1
    assert read and huge not in read


def test_a_run_names_the_files_it_skipped_a_few_per_reason(fm_home, make_repo):
    repo = shop_repo(make_repo)
    for n in range(5):
        repo.write(f"data/empty{n}.py", "")
    repo.write("data/huge.txt", "x = 1\n" * 400_000)
    repo.commit("empty and huge files")
    summary = run(repo)
    assert summary["skipped_paths"]["oversized"] == ["data/huge.txt"]
    assert summary["files_skipped"]["empty"] == 5
    assert len(summary["skipped_paths"]["empty"]) == 3


def test_blob_size_comes_from_the_object_header(make_repo):
    repo = make_repo("sizes")
    repo.write("a.txt", "12345\n")
    repo.commit("a")
    opened = GitRepo.open(repo.path)
    assert opened.blob_size(git(repo.path, "rev-parse", "HEAD:a.txt")) == 6
    with pytest.raises(ObjectNotFound):
        opened.blob_size("0" * 40)


def test_submodule_is_skipped_and_counted(fm_home, make_repo, tmp_path):
    from repo_builder import git

    lib = make_repo("lib")
    lib.write("lib.py", "def helper():\n    return 1\n").commit("lib")
    repo = shop_repo(make_repo)
    git(
        repo.path,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(lib.path),
        "third/lib",
    )
    repo.commit("add submodule")
    summary = run(repo)
    assert summary["files_skipped"].get("submodule") == 1
    assert not any(r.path.startswith("third/lib") for r in records(repo))


def test_lost_indexed_commit_rescans_and_tombstones_vanished_files(fm_home, make_repo):
    from repo_builder import git

    repo = shop_repo(make_repo)
    index_then_rewrite_history(repo)
    git(repo.path, "reflog", "expire", "--expire=now", "--all")
    git(repo.path, "gc", "-q", "--prune=now")
    run(repo)
    recs = {(r.path, r.symbol): r for r in records(repo)}
    assert recs[("src/orders/other.py", "other")].status == "live"
    assert recs[("src/orders/extra.py", "extra")].status == "tombstoned"


def _drop_loose_object(repo: RepoBuilder, sha: str) -> None:
    (repo.path / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def test_blob_missing_from_a_partial_clone_is_counted_and_the_run_goes_on(fm_home, make_repo):
    repo = make_repo("partial")
    repo.write("kept.py", "def kept():\n    return 1\n").commit("kept")
    run(repo)
    repo.write("lost.py", "def lost():\n    return 2\n")
    repo.write("new.py", "def new():\n    return 3\n").commit("two files")
    lost_blob = GitRepo.open(repo.path).blob_at(repo.head(), "lost.py")
    _drop_loose_object(repo, lost_blob)
    summary = run(repo)
    assert summary["files_skipped"] == {"missing-object": 1}
    live = {r.path for r in records(repo) if r.status == "live"}
    assert live == {"kept.py", "new.py"}


def test_rename_detection_without_the_old_blob_still_indexes_the_change(fm_home, make_repo):
    repo = make_repo("renamed-partial")
    body = "".join(f"def step_{n}():\n    return {n}\n\n\n" for n in range(20))
    repo.write("old_name.py", body).commit("old")
    run(repo)
    old_blob = GitRepo.open(repo.path).blob_at(repo.head(), "old_name.py")
    repo.rename("old_name.py", "new_name.py")
    repo.write("new_name.py", body + "def extra():\n    return 0\n").commit("renamed and grown")
    _drop_loose_object(repo, old_blob)
    run(repo)
    by_path: dict[str, set[str]] = {}
    for record in records(repo):
        by_path.setdefault(record.path, set()).add(record.status)
    assert by_path["new_name.py"] == {"live"} and by_path["old_name.py"] == {"tombstoned"}


def test_index_run_leaves_the_lexical_index_current(store_env, make_repo):
    from freshmark.adapters.lexical.tantivy_engine import index_directory
    from freshmark.adapters.lexical.tantivy_store import TantivyCollection

    repo = shop_repo(make_repo)
    run(repo)
    repo.write("src/orders/domain/order.py", DOMAIN_V2)
    repo.commit("domain v2", when="2026-03-12T10:00:00Z")
    run(repo)
    settings = Settings.from_env()
    index = Store.open(settings).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None
    lexical = TantivyCollection(index.name, index_directory(settings.cache_dir, index.name))
    assert lexical.refresh(index) == 0  # a search process starts current: nothing to fetch
    assert lexical.generation == index.manifest.generation
    assert lexical.searcher().num_docs == len(records(repo))


def test_noop_reindex_does_not_load_the_embedder(store_env, make_repo, monkeypatch):
    import freshmark.adapters.embedding

    repo = shop_repo(make_repo)
    run(repo)

    def no_model_allowed(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a no-op run loaded the embedder")

    monkeypatch.setattr(freshmark.adapters.embedding, "get_embedder", no_model_allowed)
    assert run(repo)["noop"]


PRINTER = '''package shop;

public class Printer {
  /** Prints a value as text. */
  public String print(Object value) {
    return print(value, value.getClass());
  }

  /** Prints a value of the given type. */
  public String print(Object value, Class<?> type) {
    return type.getName() + ':' + value;
  }

  /** Prints a value to a writer. */
  public void print(Object value, java.io.Writer writer) throws java.io.IOException {
    writer.write(print(value, value.getClass()));
  }
}
'''
FIRST_OVERLOAD = '''  /** Prints a value as text. */
  public String print(Object value) {
    return print(value, value.getClass());
  }

'''


def printers(repo: RepoBuilder) -> dict[str, ChunkRecord]:
    return {r.signature: r for r in records(repo) if r.symbol == "Printer.print"}


def test_removing_an_overload_tombstones_that_one_and_keeps_the_others_ids(store_env,
                                                                           make_repo):
    repo = make_repo("printer")
    repo.write("src/Printer.java", PRINTER).commit("printer")
    run(repo)
    before = printers(repo)
    repo.write("src/Printer.java", PRINTER.replace(FIRST_OVERLOAD, "")).commit("drop one")
    run(repo)
    after = printers(repo)
    assert after["public String print(Object value)"].status == "tombstoned"
    assert after["public String print(Object value)"].tombstoned_in == repo.head()
    for kept in ("public String print(Object value, Class<?> type)",
                 "public void print(Object value, java.io.Writer writer) "
                 "throws java.io.IOException"):
        assert after[kept].status == "live" and after[kept].id == before[kept].id
        assert after[kept].start_line == before[kept].start_line - 5


def test_a_rechunk_tombstones_what_was_renamed_or_deleted_since_the_stamp(store_env, make_repo,
                                                                         monkeypatch):
    repo = shop_repo(make_repo)
    with monkeypatch.context() as earlier:
        earlier.setattr("freshmark.services.indexing.layers.CHUNKING_VERSION", "0")
        run(repo)
    repo.rename("src/payment/payment.go", "src/billing/payment.go")
    repo.delete("src/orders/handlers/cancel_handler.py").commit("move and drop")
    run(repo)  # the rules changed too: every file is chunked again
    by_path: dict[str, set[str]] = {}
    for record in records(repo):
        by_path.setdefault(record.path, set()).add(record.status)
    assert by_path["src/payment/payment.go"] == {"tombstoned"}
    assert by_path["src/orders/handlers/cancel_handler.py"] == {"tombstoned"}
    assert by_path["src/billing/payment.go"] == {"live"}
    assert all(r.successor == "src/billing/payment.go" for r in records(repo)
               if r.path == "src/payment/payment.go")


def test_a_rechunk_retires_live_chunks_an_earlier_run_left_of_a_vanished_path(
        store_env, make_repo, monkeypatch):
    repo = shop_repo(make_repo)
    with monkeypatch.context() as earlier:
        earlier.setattr("freshmark.services.indexing.layers.CHUNKING_VERSION", "0")
        run(repo)
        repo.delete("src/orders/handlers/cancel_handler.py").commit("drop")
        # A full pass that saw no deletion (as one before this rule did) leaves them live.
        earlier.setattr("freshmark.services.indexing.layers.CHUNKING_VERSION", "1")
        earlier.setattr("freshmark.services.indexing.layers.with_moves", lambda full, _: full)
        earlier.setattr("freshmark.services.indexing.run.IndexRun.tombstone_vanished",
                        lambda self, layer: None)
        run(repo)
        assert {r.status for r in records(repo)
                if r.path == "src/orders/handlers/cancel_handler.py"} == {"live"}
    run(repo)
    assert {r.status for r in records(repo)
            if r.path == "src/orders/handlers/cancel_handler.py"} == {"tombstoned"}


def test_an_index_chunked_under_other_rules_is_chunked_again_once(store_env, make_repo,
                                                                   monkeypatch):
    repo = shop_repo(make_repo)
    with monkeypatch.context() as earlier:
        earlier.setattr("freshmark.services.indexing.layers.CHUNKING_VERSION", "0")
        first = run(repo)
    again = run(repo)  # no new commit, but the rules changed since
    assert again["files_seen"] == first["files_seen"] > 0
    assert again["chunks_added"] == 0 and again["embeddings_computed"] == 0  # same chunks
    assert again["chunks_unchanged"] == first["chunks_added"]
    assert run(repo)["files_seen"] == 0  # the new version is recorded


def test_batches_name_their_skipped_files_to_the_run_up_to_the_same_few():
    run_summary = IndexSummary(repo="r", branch="main", collection="c", embedder="e")
    for first in (0, 2):
        batch = IndexSummary(repo="r", branch="main", collection="c", embedder="e")
        for n in range(first, first + 2):
            batch.skip("binary", f"b{n}.bin")
        run_summary.add_batch_counts(json.loads(json.dumps(batch.batch_counts())))
    assert run_summary.files_skipped == {"binary": 4}
    assert run_summary.skipped_paths == {"binary": ["b0.bin", "b1.bin", "b2.bin"]}


def test_a_changed_classify_rule_classifies_an_indexed_layer_again(store_env, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    assert {r.file_kind for r in records(repo) if r.path.startswith("src/orders/domain/")} == {
        "source"}
    again = run(repo, config=Config(rules=ClassifyRules(test=("src/orders/domain/**",))))
    assert again["noop"] is False and again["embeddings_computed"] == 0
    assert {r.file_kind for r in live(records(repo)).values()
            if r.path.startswith("src/orders/domain/")} == {"test"}
    assert run(repo, config=Config(rules=ClassifyRules(test=("src/orders/domain/**",))))[
        "noop"] is True

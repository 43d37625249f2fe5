"""Two layers of one branch indexed at the same time (as two workers do): neither run's stamp is
lost, and the lexical index holds what the run that stamped last wrote.

The infrastructure run is held at the start of its layer (its progress callback waits on an
event the test sets), after it took its generation; the hot run goes from start to stamp
meanwhile; then the infrastructure run writes and stamps. Real git, embedded Chroma, tantivy.
"""

from __future__ import annotations

import threading

from repo_builder import RepoBuilder

from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config, Layer
from freshmark.core.manifest import Manifest
from freshmark.core.progress import START, IndexProgress
from freshmark.core.settings import Settings
from freshmark.core.tokenize import query_terms
from freshmark.services.indexing.indexer import IndexRequest, index_repo

CONFIG = Config(layers=(Layer("hot", ("src/**",)), Layer("infra", ("infra/**",), queue="infra")))
HELD_RUN_TIMEOUT_SECONDS = 120  # a deadline against a hung test, not a measurement


def _shop(make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write("src/app.py", "def checkout_total(cart):\n    return sum(cart)\n")
    repo.write("infra/deploy.py", "def provision_cluster(size):\n    return size\n")
    repo.commit("initial")
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=CONFIG)
    repo.write("src/app.py", "def refund_order(order):\n    return order.total\n")
    repo.write("infra/deploy.py", "def rotate_certificates(hosts):\n    return hosts\n")
    repo.commit("both layers change")
    return repo


def _side_by_side(repo: RepoBuilder) -> Manifest:
    """The infra layer's run held after it began, the hot layer's run done meanwhile."""
    settings = Settings.from_env()
    began, go_on = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def hold_at_start(event: IndexProgress) -> None:
        if event.phase == START and not began.is_set():
            began.set()
            assert go_on.wait(HELD_RUN_TIMEOUT_SECONDS)

    def infra() -> None:
        try:
            index_repo(IndexRequest(repo.path, layer="infra"), settings=settings,
                       config=CONFIG, progress=hold_at_start)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    held = threading.Thread(target=infra)
    held.start()
    assert began.wait(HELD_RUN_TIMEOUT_SECONDS), failures
    index_repo(IndexRequest(repo.path, layer="hot"), settings=settings, config=CONFIG)
    go_on.set()
    held.join(HELD_RUN_TIMEOUT_SECONDS)
    assert not failures, failures
    return _view(repo).manifest


def _view(repo: RepoBuilder):  # noqa: ANN202 - the store's BranchView
    index = Store.open(Settings.from_env()).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None
    return index


def test_both_layers_stamps_survive_runs_side_by_side(make_repo) -> None:
    repo = _shop(make_repo)
    manifest = _side_by_side(repo)
    head = repo.head()
    assert (manifest.layer_commit("hot"), manifest.layer_commit("infra"), manifest.commit) == (
        head, head, head)


def test_lexical_index_holds_the_chunks_of_the_run_that_stamped_last(make_repo) -> None:
    repo = _shop(make_repo)
    _side_by_side(repo)
    channel = lexical_engine(Settings.from_env()).channel(_view(repo))
    hits, _ = channel.search(query_terms("rotate certificates"), 5)
    assert [hit for hit in hits if not hit.tombstoned]

"""An index run works in bounded batches and reads only what its changes need.

The runs go to a real store (embedded, then a real Chroma server) through a client that
counts the ids each call carried (``store_recorder``), on a real repository of 40 files:
what a run holds at once is set by ``[index] batch_files`` / ``batch_chunks``, not by the
repository, and an incremental or overlay run reads the chunks of the changed paths only.
"""

from __future__ import annotations

from repo_builder import RepoBuilder, git
from store_recorder import Traffic, recording

from freshmark.adapters.store.chroma import Store
from freshmark.core.config import ClassifyRules, Config
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.indexing.summary import IndexSummary

FILES = 40
FUNCTIONS_PER_FILE = 4
SMALL_BATCHES = Config(rules=ClassifyRules(batch_files=3, batch_chunks=5))


def module(number: int, body: str = "x + {j}") -> str:
    return "\n\n".join(f"def f{number}_{j}(x):\n    return {body.format(j=j)}\n"
                       for j in range(FUNCTIONS_PER_FILE))


def forty_files(make_repo) -> RepoBuilder:
    repo = make_repo("many")
    for number in range(FILES):
        repo.write(f"pkg/m{number}.py", module(number))
    repo.commit("forty modules")
    return repo


def indexed(repo: RepoBuilder, store: Store, config: Config = SMALL_BATCHES,
            **request: str) -> IndexSummary:
    return index_repo(IndexRequest(repo.path, **request), settings=Settings.from_env(),
                      config=config, store=store)


def recorded_store() -> tuple[Store, Traffic]:
    store = Store.open(Settings.from_env())
    return store, recording(store)


def test_a_full_index_writes_no_more_chunks_at_once_than_batch_chunks(store_env, make_repo):
    repo = forty_files(make_repo)
    store, traffic = recorded_store()
    summary = indexed(repo, store)
    assert summary.chunks_added == FILES * FUNCTIONS_PER_FILE
    assert traffic.largest_write() <= 5
    assert traffic.written_total() == FILES * FUNCTIONS_PER_FILE  # each chunk written once


def test_the_default_batches_write_a_small_repository_in_one_part(store_env, make_repo):
    repo = forty_files(make_repo)
    store, traffic = recorded_store()
    indexed(repo, store, config=Config())
    assert traffic.largest_write() == FILES * FUNCTIONS_PER_FILE


def test_an_incremental_run_reads_only_the_chunks_of_the_changed_file(store_env, make_repo):
    repo = forty_files(make_repo)
    store, traffic = recorded_store()
    indexed(repo, store)
    traffic.clear()
    repo.write("pkg/m7.py", module(7, "x * {j}"))
    repo.commit("one file")
    summary = indexed(repo, store)
    assert summary.chunks_updated == FUNCTIONS_PER_FILE
    # Each read (the changed path's ids, their records; the lexical catch-up's changed ids and
    # records) holds that file's chunks, never the collection's 160.
    assert traffic.largest_read() == FUNCTIONS_PER_FILE


def test_an_incremental_run_does_not_list_every_collection(store_env, make_repo):
    repo = forty_files(make_repo)
    store, traffic = recorded_store()
    first = indexed(repo, store)
    assert traffic.listings <= 1  # only to seed the store's name registry, if it has none yet
    traffic.clear()
    repo.write("pkg/m7.py", module(7, "x * {j}"))
    repo.commit("one file")
    summary = indexed(repo, store)
    assert summary.repo == first.repo
    assert traffic.listings == 0


def test_an_overlay_run_reads_only_the_changed_paths_of_its_base(store_env, make_repo):
    repo = forty_files(make_repo)
    store, traffic = recorded_store()
    base = indexed(repo, store)
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("pkg/m5.py", module(5, "x - {j}")).write("pkg/new.py", module(99))
    repo.commit("two files")
    traffic.clear()
    overlay = indexed(repo, store, branch="feature", base_branch="main")
    assert overlay.layered_on == "main"
    assert traffic.read_total(base.collection) <= 2 * FUNCTIONS_PER_FILE
    assert traffic.largest_read() <= 2 * FUNCTIONS_PER_FILE

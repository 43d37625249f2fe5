"""A split run numbers its batches largest first, so that the run ends on its smallest ones."""

from __future__ import annotations

from test_split_lexical import InOrder

from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo


def test_a_split_run_numbers_its_batches_by_the_bytes_they_read_largest_first(make_repo, fm_home):
    repo = make_repo("sizes")
    for number in range(24):  # sizes that do not follow the paths' order
        repo.write(f"pkg/m{number:02d}.py", "def f(x):\n    return x\n" * (1 + number * 7 % 24))
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400)  # skipped, yet read
    repo.commit("modules of many sizes")
    fan_out = InOrder()
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config(),
               store=Store.open(Settings.from_env()), fan_out=fan_out)
    sizes = [sum(len((repo.path / c.new_path).read_bytes()) for c in batch.changes
                 if c.new_path) for batch in fan_out.batches]
    assert len(set(sizes)) > 2
    assert sizes == sorted(sizes, reverse=True)

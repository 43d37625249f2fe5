"""A store lists its collections without chromadb's client until one is needed (the embedded
store's file; a server's own client does not import chromadb), so a ``status`` process reads
manifests without importing chromadb (~0.5 s of CPU)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import chromadb
from conftest import ChromaServer
from test_indexer import run, shop_repo

from freshmark.adapters.store.catalog import FILE_NAME, EmbeddedCatalog
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.shard import Shard
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.services.upkeep.drop import BranchState, drop_index

# A new process: prints what ``status`` says and whether chromadb was imported for it.
STATUS_PROBE = """
import json, sys
from freshmark.faces.cli.main import main
sys.argv = ["freshmark", "status", sys.argv[1], "--json"]
try:
    main()
except SystemExit:
    pass
print(json.dumps({"chromadb_imported": "chromadb" in sys.modules}))
"""


def listed(collections: list) -> dict[str, dict]:
    return {c.name: dict(c.metadata or {}) for c in collections}


def printed_words(probe: str, **env: str) -> list[str]:
    """What ``probe`` prints, word by word, run in a new Python process with ``env`` added."""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True, env={**os.environ, **env})
    return done.stdout.split()


def test_the_catalog_lists_what_the_client_lists(fm_home: Path, make_repo) -> None:
    repo = shop_repo(make_repo)
    run(repo)
    settings = Settings.from_env()
    from_client = listed(Store.open(settings).shards[0].client.list_collections())
    from_catalog = EmbeddedCatalog(settings.chroma_path).collections()
    assert from_catalog is not None
    assert listed(from_catalog) == from_client
    assert any(name.startswith("fm-") for name in from_client)


def test_a_dropped_repository_leaves_the_catalog(fm_home: Path, make_repo) -> None:
    repo = shop_repo(make_repo)
    run(repo)
    settings = Settings.from_env()
    catalog = EmbeddedCatalog(settings.chroma_path)
    before = {c.name for c in catalog.collections() or []}
    state = BranchState.open(settings, Store.open(settings), config=Config())
    drop_index(str(repo.path), None, settings=settings, config=Config(), state=state)
    after = {c.name for c in catalog.collections() or []}
    dropped = {name for name in before - after if name.startswith("fm-")}
    assert dropped and not any(name.startswith("fm-") for name in after)


def test_a_store_never_written_lists_nothing(tmp_path: Path) -> None:
    assert EmbeddedCatalog(tmp_path / "chroma").collections() == []


def test_a_file_of_other_tables_is_left_to_the_client(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with sqlite3.connect(foreign / FILE_NAME) as db:
        db.execute("CREATE TABLE things (name TEXT)")
    assert EmbeddedCatalog(foreign).collections() is None

    real = tmp_path / "real"
    client = chromadb.PersistentClient(path=str(real))
    client.create_collection("fm-held", metadata={"k": "v"}, embedding_function=None)
    shard = Shard(None, "here", "here", connect=lambda: client, catalog=EmbeddedCatalog(foreign))
    assert listed(shard.collections()) == {"fm-held": {"k": "v"}}


def test_status_reads_manifests_without_importing_chromadb(store_env: str, make_repo) -> None:
    repo = shop_repo(make_repo)
    run(repo)
    probe = subprocess.run([sys.executable, "-c", STATUS_PROBE, str(repo.path)],
                           capture_output=True, text=True, timeout=120, check=True)
    *status_lines, last = probe.stdout.strip().splitlines()
    (row,) = json.loads("\n".join(status_lines))
    assert row["branch"] == "main" and row["live_chunks"] > 0
    assert json.loads(last) == {"chromadb_imported": False}


def test_the_api_server_imports_chromas_client_at_start_not_in_its_first_search(
        fm_home: Path) -> None:
    probe = ("import sys\n"
             "from freshmark.faces.http.app import create_app\n"
             "before = 'chromadb' in sys.modules\n"
             "create_app(bind_host='127.0.0.1')\n"
             "print(before, 'chromadb' in sys.modules)\n")
    assert printed_words(probe, FRESHMARK_REDIS_URL="redis://127.0.0.1:1/0") == ["False", "True"]


def test_a_process_using_a_chroma_server_never_imports_chromadb(
        chroma_server: ChromaServer, tmp_path: Path) -> None:
    probe = ("import sys\n"
             "from freshmark.adapters.store.chroma import Store\n"
             "from freshmark.adapters.store.shard import import_client_library\n"
             "from freshmark.core.settings import Settings\n"
             "settings = Settings.from_env()\n"
             "import_client_library(settings)\n"
             "home = Store.open(settings).shards[0]\n"
             "home.create('fm-probe-import', {'k': 'v'})\n"
             "print('fm-probe-import' in home.names(), 'chromadb' in sys.modules)\n"
             "home.delete('fm-probe-import')\n")
    assert printed_words(probe, FRESHMARK_HOME=str(tmp_path / "home"),
                         FRESHMARK_CHROMA_URL=chroma_server.url) == ["True", "False"]

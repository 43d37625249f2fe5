"""A chunk is embedded with a line naming it (its path and its symbol's words) before its source;
a vector is reused only for the same symbol and source."""

from __future__ import annotations

import numpy as np
from test_indexer import records, run, shop_repo

from freshmark.adapters.embedding.hashing import HashingEmbedder
from freshmark.adapters.store.chroma import Store
from freshmark.core.embed_text import embedding_text, name_line, vector_key
from freshmark.core.plan import reusable_vectors
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord, sha256_hex


def record(path: str, symbol: str, text: str, record_id: str = "x") -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c", path=path, symbol=symbol,
                       start_line=1, end_line=2, indexed_at="t", blob_sha="b",
                       content_sha256="s", id=record_id, text=text,
                       text_sha256=sha256_hex(text))


def test_the_name_line_holds_the_path_and_the_symbols_words() -> None:
    assert name_line("lib/command.js", "Command._parseOptionsImplied") == \
        "lib/command.js command parse options implied\n"
    assert name_line("src/a.py", "<module>#2") == "src/a.py module 2\n"
    assert name_line("x.go", "HTTPError.Error") == "x.go httperror error\n"


def test_the_embedded_text_is_the_name_line_then_the_source() -> None:
    chunk = record("src/orders.py", "cancel_order", "def cancel_order(): ...\n")
    assert embedding_text(chunk) == "src/orders.py cancel order\ndef cancel_order(): ...\n"


def test_one_source_under_two_names_has_two_vector_keys() -> None:
    text = "def run(): pass\n"
    assert vector_key(record("a.py", "run", text)) != vector_key(record("b.py", "run", text))
    assert vector_key(record("a.py", "run", text)) != vector_key(record("a.py", "go", text))
    assert vector_key(record("a.py", "run", text)) == vector_key(record("a.py", "run", text))


def test_a_stored_chunk_lends_its_vector_only_for_the_same_symbol_and_source() -> None:
    text = "def run(): pass\n"
    moved = record("new/a.py", "run", text)
    renamed = record("a.py", "start", text)
    donors = [record("old/a.py", "run", text, "donor")]
    assert reusable_vectors([moved, renamed], donors) == {vector_key(moved): "donor"}


def test_an_indexed_chunk_holds_the_vector_of_its_name_line_and_source(fm_home, make_repo):
    repo = shop_repo(make_repo)
    run(repo)
    chunk = next(r for r in records(repo) if r.symbol == "OrderService.cancel_order")
    index = Store.open(Settings.from_env()).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None
    stored = index.embeddings_for([chunk.id])[chunk.id]
    embedder = HashingEmbedder()
    assert np.allclose(stored, embedder.embed([embedding_text(chunk)])[0], atol=1e-6)
    assert not np.allclose(stored, embedder.embed([chunk.text])[0], atol=1e-3)


def test_copies_of_stored_chunks_in_new_files_borrow_their_vectors(fm_home, make_repo):
    """Two new files holding the chunks of a file changed in the same run (a licence header
    or a helper copied into many modules) borrow those chunks' vectors: each donor is read
    once (a store read naming one id twice is refused)."""
    repo = shop_repo(make_repo)
    run(repo)
    domain = repo.path / "src/orders/domain/order.py"
    source = domain.read_text()
    repo.write("src/copies/a/order.py", source)
    repo.write("src/copies/b/order.py", source)
    repo.write("src/orders/domain/order.py", source + "\n\ndef added():\n    return 1\n")
    repo.commit("two copies", when="2026-03-12T10:00:00Z")
    summary = run(repo)
    copied = [r for r in records(repo) if r.path.startswith("src/copies/")]
    assert summary["chunks_added"] == len(copied) + 1 and copied
    assert summary["embeddings_computed"] == 1  # ``added``
    assert summary["embeddings_reused"] == len(copied)

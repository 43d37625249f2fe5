"""Two processes against one Chroma server: a writer runs index runs, a long-lived reader
searches. The reader's lexical index follows the writer by generation, and both channels agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One script, two roles: ``write`` performs one index run and exits; ``serve`` keeps one store
# connection, one BranchIndex and one lexical index for its whole life and answers a JSON query
# per stdin line, as a query server on another host would.
PROCESS_SCRIPT = r'''
import json, sys
import numpy as np
from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.store.chroma import Store
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import TOMBSTONED, ChunkRecord, chunk_id, sha256_hex, utc_now_iso
from freshmark.services.retrieval.hybrid import hybrid_search

settings = Settings.from_env()
embedder = get_embedder("hashing", settings.cache_dir)
store = Store.open(settings)
role, key = sys.argv[1], sys.argv[2]

def record(path, symbol, text):
    return ChunkRecord(repo="shop", branch="main", commit="c" * 40, path=path, symbol=symbol,
                       start_line=1, end_line=text.count("\n") + 1, indexed_at=utc_now_iso(),
                       blob_sha="b" * 40, content_sha256=sha256_hex(text),
                       signature=text.splitlines()[0], id=chunk_id(path, symbol, 0), text=text)

def write(run):
    index = store.branch(key, "main") or store.create_branch(Manifest(
        repo="shop", repo_key=key, branch="main", embedder=embedder.id,
        collection=collection_name(key, "main"), created_at=utc_now_iso()))
    generation = index.reload_manifest().generation + 1
    records = [record(*chunk) for chunk in run.get("upsert", [])]
    for r in records:
        r.updated_gen = generation
    if records:
        index.upsert(records, embedder.embed([r.text for r in records]))
    tombstones = [chunk_id(path, symbol, 0) for path, symbol in run.get("tombstone", [])]
    if tombstones:
        index.update_metadata([(i, {"status": TOMBSTONED, "updated_gen": generation})
                               for i in tombstones])
    manifest = index.reload_manifest()
    manifest.generation, manifest.commit = generation, "e" * 40
    index.save_manifest(manifest)

def serve():
    index = store.branch(key, "main")
    for line in sys.stdin:
        ask = json.loads(line)
        request = SearchRequest.build(ask["query"], k=5,
                                      include_history=ask.get("history", False))
        found, _ = hybrid_search(index, embedder, request)
        print(json.dumps([{"symbol": c.record.symbol, "status": c.record.status,
                           "bm25_rank": c.bm25_rank, "vector_rank": c.vector_rank}
                          for c in found]), flush=True)

write(json.loads(sys.argv[3])) if role == "write" else serve()
'''

CANCEL = ("src/orders/service.py", "cancel_order",
          "def cancel_order(order_id):\n    restock(order_id)\n")
CREATE = ("src/orders/service.py", "create_order", "def create_order(cart):\n    return cart\n")
REFUND = ("src/billing/refund.py", "refund_payment",
          "def refund_payment(payment):\n    payment.refund()\n")


@pytest.fixture
def server_env(chroma_server, fm_home: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = dict(os.environ, FRESHMARK_CHROMA_URL=chroma_server.url, FRESHMARK_HOME=str(fm_home),
               PYTHONPATH=str(ROOT))
    return env


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "process.py"
    path.write_text(PROCESS_SCRIPT)
    return path


class Reader:
    def __init__(self, script: Path, key: str, env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, str(script), "serve", key], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def search(self, query: str, history: bool = False) -> list[dict]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"query": query, "history": history}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the reader process died"
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def key() -> str:
    return f"shop-{uuid.uuid4().hex}"


@pytest.fixture
def reader(script: Path, key: str, server_env: dict[str, str]) -> Iterator[Reader]:
    write(script, key, server_env, {"upsert": [CANCEL, CREATE]})
    proc = Reader(script, key, server_env)
    yield proc
    proc.close()


def write(script: Path, key: str, env: dict[str, str], run: dict) -> None:
    subprocess.run([sys.executable, str(script), "write", key, json.dumps(run)], env=env,
                   check=True, timeout=120)


@pytest.mark.server
def test_reader_sees_another_process_add_and_tombstone_in_both_channels(
    reader: Reader, script: Path, key: str, server_env: dict[str, str]
) -> None:
    before = reader.search("cancel_order restock")
    assert before[0]["symbol"] == "cancel_order" and before[0]["bm25_rank"] == 1
    assert "refund_payment" not in [r["symbol"] for r in reader.search("refund_payment")]

    write(script, key, server_env, {"upsert": [REFUND], "tombstone": [CANCEL[:2]]})

    added = reader.search("refund_payment")[0]
    assert added["symbol"] == "refund_payment"
    assert added["bm25_rank"] == 1 and added["vector_rank"] is not None
    assert "cancel_order" not in [r["symbol"] for r in reader.search("cancel_order restock")]
    historical = reader.search("cancel_order restock", history=True)[0]
    assert (historical["symbol"], historical["status"]) == ("cancel_order", "tombstoned")
    assert historical["bm25_rank"] == 1 and historical["vector_rank"] is not None


@pytest.mark.server
def test_reader_sees_an_update_by_its_new_text(
    reader: Reader, script: Path, key: str, server_env: dict[str, str]
) -> None:
    assert reader.search("restock")[0]["symbol"] == "cancel_order"
    rewritten = (CANCEL[0], CANCEL[1], "def cancel_order(order_id):\n    ledger_void(order_id)\n")
    write(script, key, server_env, {"upsert": [rewritten]})
    top = reader.search("ledger_void")[0]
    assert top["symbol"] == "cancel_order" and top["bm25_rank"] == 1
    assert all(r["bm25_rank"] is None for r in reader.search("restock"))

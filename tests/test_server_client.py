"""The server client speaks Chroma's REST API as chromadb's own client does: what one writes
the other reads, every float32 of a vector exact, on a real Chroma server. (That a process
using it never imports chromadb: ``test_store_catalog.py``.)"""

from __future__ import annotations

import http.server
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings
from conftest import ChromaServer

from freshmark.adapters.store import server_client
from freshmark.adapters.store.calls import guard
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.server_client import (
    ChromaServerError,
    NotFoundError,
    ServerClient,
    ServerCollection,
)
from freshmark.adapters.store.shard import COLLECTION_CONFIGURATION
from freshmark.core.errors import ConfigError, StoreUnavailable
from freshmark.core.placement import parse_server
from freshmark.core.settings import Settings

IDS = ["a", "b", "c"]
DOCUMENTS = ["def add(x, y):", "class Cart:", "# notes"]
METADATAS = [{"path": "m.py", "start": 1}, {"path": "c.py", "start": 4},
             {"path": "n.md", "live": True}]


@pytest.fixture
def ours(chroma_server: ChromaServer) -> ServerClient:
    return ServerClient(parse_server(chroma_server.url, "URL"))


@pytest.fixture
def theirs(chroma_server: ChromaServer) -> chromadb.api.ClientAPI:
    return chromadb.HttpClient(host="127.0.0.1", port=chroma_server.port,
                               settings=ChromaSettings(anonymized_telemetry=False))


@pytest.fixture
def name(ours: ServerClient) -> Iterator[str]:
    held = f"probe-{uuid4().hex[:12]}"
    yield held
    try:
        ours.delete_collection(held)
    except NotFoundError:
        pass


def vectors(rows: int = 3, seed: int = 7) -> np.ndarray:
    found = np.random.default_rng(seed).normal(size=(rows, 16)).astype(np.float32)
    return found / np.linalg.norm(found, axis=1, keepdims=True)


def created(ours: ServerClient, name: str) -> ServerCollection:
    return ours.get_or_create_collection(name, metadata={"freshmark": "probe"},
                                         configuration=COLLECTION_CONFIGURATION)


def test_chromadbs_client_reads_what_the_server_client_wrote(ours, theirs, name) -> None:
    created(ours, name).upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS,
                               metadatas=METADATAS)
    got = theirs.get_collection(name, embedding_function=None).get(
        include=["embeddings", "documents", "metadatas"])
    order = [got["ids"].index(i) for i in IDS]
    assert np.array_equal(np.asarray(got["embeddings"], dtype=np.float32)[order], vectors())
    assert [got["documents"][i] for i in order] == DOCUMENTS
    assert [got["metadatas"][i] for i in order] == METADATAS


def test_the_server_client_reads_what_chromadbs_client_wrote(ours, theirs, name) -> None:
    theirs.get_or_create_collection(name, embedding_function=None,
                                    configuration=COLLECTION_CONFIGURATION).upsert(
        ids=IDS, embeddings=vectors(), documents=DOCUMENTS, metadatas=METADATAS)
    got = ours.get_collection(name).get(ids=IDS, include=["embeddings", "documents",
                                                          "metadatas"])
    order = [got["ids"].index(i) for i in IDS]
    assert np.array_equal(np.asarray(got["embeddings"], dtype=np.float32)[order], vectors())
    assert [got["documents"][i] for i in order] == DOCUMENTS
    assert [got["metadatas"][i] for i in order] == METADATAS


def test_nearest_neighbours_are_the_ones_chromadbs_client_finds(ours, theirs, name) -> None:
    created(ours, name).upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS,
                               metadatas=METADATAS)
    probe = vectors(1, seed=11)
    mine = ours.get_collection(name).query([probe[0]], n_results=3,
                                           where={"path": {"$in": ["m.py", "c.py"]}},
                                           include=["distances", "documents"])
    their = theirs.get_collection(name, embedding_function=None).query(
        query_embeddings=probe, n_results=3, where={"path": {"$in": ["m.py", "c.py"]}},
        include=["distances", "documents"])
    assert mine["ids"] == their["ids"] and len(mine["ids"][0]) == 2
    assert np.allclose(mine["distances"], their["distances"])
    assert mine["documents"] == their["documents"]


def test_a_collection_it_creates_is_configured_as_chromadbs_client_configures_it(
        ours, theirs, name) -> None:
    created(ours, name)
    twin = f"{name}-twin"
    theirs.get_or_create_collection(twin, embedding_function=None, metadata={"k": "v"},
                                    configuration=COLLECTION_CONFIGURATION)
    try:
        mine, their = (theirs.get_collection(n, embedding_function=None).configuration_json
                       for n in (name, twin))
        assert mine == their and mine["hnsw"]["space"] == "cosine"
    finally:
        ours.delete_collection(twin)


def test_updates_counts_deletes_and_renames_reach_the_server(ours, theirs, name) -> None:
    collection = created(ours, name)
    collection.upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS, metadatas=METADATAS)
    collection.update(ids=["a"], metadatas=[{"path": "m.py", "start": 9}])
    collection.delete(ids=["c"])
    collection.modify(metadata={"freshmark": "changed"})
    assert collection.count() == 2
    assert collection.get(ids=["a"], include=["metadatas"])["metadatas"] == [
        {"path": "m.py", "start": 9}]
    collection.modify(name=f"{name}-moved")
    try:
        assert theirs.get_collection(f"{name}-moved").metadata == {"freshmark": "changed"}
    finally:
        collection.modify(name=name)


def test_a_server_taking_fewer_records_a_write_gets_several_writes(ours, name,
                                                                   monkeypatch) -> None:
    monkeypatch.setattr(ours, "_pre_flight", {"max_batch_size": 2,
                                              "supports_base64_encoding": True})
    collection = created(ours, name)
    writes: list[int] = []
    send = collection._api.request

    def counted(method: str, route: str, body: Any = None, **kwargs: Any) -> Any:
        if route.endswith("/upsert"):
            writes.append(len(body["ids"]))
        return send(method, route, body, **kwargs)

    monkeypatch.setattr(collection._api, "request", counted)
    collection.upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS, metadatas=METADATAS)
    assert writes == [2, 1]
    got = collection.get(include=["documents"])
    assert sorted(zip(got["ids"], got["documents"], strict=True)) == sorted(
        zip(IDS, DOCUMENTS, strict=True))


def test_vectors_go_as_lists_of_floats_to_a_server_without_base64(ours, name,
                                                                   monkeypatch) -> None:
    monkeypatch.setattr(ours, "_pre_flight", {"supports_base64_encoding": False})
    collection = created(ours, name)
    collection.upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS, metadatas=METADATAS)
    got = collection.get(ids=IDS, include=["embeddings"])
    order = [got["ids"].index(i) for i in IDS]
    assert np.array_equal(np.asarray(got["embeddings"], dtype=np.float32)[order], vectors())


def test_a_missing_collection_is_not_found(ours) -> None:
    with pytest.raises(NotFoundError, match="does not exist"):
        ours.get_collection(f"absent-{uuid4().hex[:8]}")


@pytest.mark.parametrize("answer", [404, 200], ids=["not-found", "a-page-not-json"])
def test_a_url_without_chromas_api_is_a_config_error_naming_it(fm_home, monkeypatch,
                                                               answer: int) -> None:
    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            if answer != 200:
                self.send_error(answer)
                return
            page = b"<html>a web site</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *_: Any) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("FRESHMARK_CHROMA_URL", f"http://u:s3cret@127.0.0.1:{site.server_port}")
        with pytest.raises(ConfigError, match="no Chroma API at /api/v2") as caught:
            Store.open(Settings.from_env())
        assert "FRESHMARK_CHROMA_URL" in str(caught.value) and "s3cret" not in str(caught.value)
    finally:
        site.shutdown()


def test_a_server_that_does_not_answer_is_retryable_and_its_password_unsaid() -> None:
    down = ServerClient(parse_server("http://user:s3cret@127.0.0.1:1", "URL"))
    with pytest.raises(StoreUnavailable) as caught:
        guard("reach it", down.heartbeat)
    assert "s3cret" not in str(caught.value)  # StoreUnavailable: a RetryableError


def test_a_server_that_accepts_but_never_answers_times_out_retryably() -> None:
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
    try:
        client = ServerClient(parse_server(f"http://127.0.0.1:{silent.getsockname()[1]}", "URL"),
                              timeout_seconds=0.5)
        with pytest.raises(StoreUnavailable, match="timed out"):
            guard("list collections", client.list_collections)
    finally:
        silent.close()
        for connection in held:
            connection.close()


def test_an_answer_over_the_size_bound_is_refused_and_the_next_request_works(
        ours, name, monkeypatch) -> None:
    created(ours, name).upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS,
                               metadatas=METADATAS)
    monkeypatch.setattr(server_client, "MAX_ANSWER_BYTES", 64)
    with pytest.raises(ChromaServerError, match="AnswerTooLarge"):
        ours.get_collection(name).get(include=["documents"])
    monkeypatch.undo()
    assert ours.get_collection(name).count() == 3


def test_a_connection_the_server_closed_is_opened_again(tmp_path: Path) -> None:
    server = ChromaServer(tmp_path / "data")
    server.data_dir.mkdir()
    server.start()
    client = ServerClient(parse_server(server.url, "URL"))
    try:
        client.heartbeat()
        server.stop()
        server.start()  # the same port: the connection held is now closed at the other end
        assert client.heartbeat() > 0
    finally:
        server.stop()


def test_threads_share_a_client_each_on_its_own_connection(ours, name) -> None:
    created(ours, name).upsert(ids=IDS, embeddings=vectors(), documents=DOCUMENTS,
                               metadatas=METADATAS)
    collection = ours.get_collection(name)
    seen: list[list[str]] = []

    def read() -> None:
        for _ in range(20):
            seen.append(sorted(collection.get(include=[])["ids"]))

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [sorted(IDS)] * 120


def test_a_forked_child_opens_its_own_connection(ours) -> None:
    ours.heartbeat()
    pid = os.fork()
    if pid == 0:  # the child: a connection of its own, which works
        try:
            _, reused = ours._api._connection()
            os._exit(0 if not reused and ours.heartbeat() > 0 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert ours._api._connection()[1]  # the parent's is still its own
    assert ours.heartbeat() > 0

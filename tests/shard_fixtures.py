"""Several real Chroma servers for the sharded store: started once a session, emptied per test.

``chroma_shards`` yields four ``chroma run`` servers on free loopback ports; tests list the
first three in ``FRESHMARK_CHROMA_URLS`` and add the fourth to see what moves.
"""

from __future__ import annotations

from collections.abc import Iterator

import chromadb
import pytest
from chromadb.config import Settings as ChromaSettings
from conftest import ChromaServer

SERVERS = 4


@pytest.fixture(scope="session")
def chroma_shard_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ChromaServer]]:
    servers = []
    try:
        for number in range(SERVERS):
            root = tmp_path_factory.mktemp(f"chroma-shard-{number}")
            server = ChromaServer(root / "data")
            server.data_dir.mkdir()
            server.start()
            servers.append(server)
        yield servers
    finally:
        for server in servers:
            server.stop()


def empty(server: ChromaServer) -> None:
    client = chromadb.HttpClient(host="127.0.0.1", port=server.port,
                                 settings=ChromaSettings(anonymized_telemetry=False))
    for collection in client.list_collections():
        client.delete_collection(collection.name)


@pytest.fixture
def chroma_shards(chroma_shard_servers: list[ChromaServer]) -> list[ChromaServer]:
    """The session's servers, every collection deleted: each test sees only its own."""
    for server in chroma_shard_servers:
        empty(server)
    return chroma_shard_servers

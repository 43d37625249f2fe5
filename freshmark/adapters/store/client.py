"""What the store calls on a Chroma: one protocol for both kinds.

chromadb's ``PersistentClient`` (the embedded Chroma) and ``ServerClient`` (a server's REST
API, ``server_client.py``) both answer it, with chromadb's method names and keywords, so the
store's code (``shard.py``, ``collection.py``, ``names.py``, ``relocate.py``) is one for both.
Reads answer chromadb's result shape: a mapping of ``ids`` and, as ``include`` asks,
``embeddings``, ``documents``, ``metadatas`` (``query``: one list per query vector, and
``distances``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class ChromaCollection(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def id(self) -> Any: ...  # chromadb's UUID, a server's id as text: both print the same

    @property
    def metadata(self) -> Mapping[str, Any] | None: ...

    def count(self) -> int: ...

    def modify(self, name: str | None = None,
               metadata: dict[str, Any] | None = None) -> None: ...

    def get(self, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None,
            limit: int | None = None, offset: int | None = None,
            include: Sequence[str] = ...) -> Mapping[str, Any]: ...

    def query(self, query_embeddings: Sequence[Any], n_results: int = 10,
              where: dict[str, Any] | None = None,
              include: Sequence[str] = ...) -> Mapping[str, Any]: ...

    def add(self, ids: Sequence[str], embeddings: Any = None,
            metadatas: Sequence[dict[str, Any]] | None = None,
            documents: Sequence[str] | None = None) -> None: ...

    def upsert(self, ids: Sequence[str], embeddings: Any = None,
               metadatas: Sequence[dict[str, Any]] | None = None,
               documents: Sequence[str] | None = None) -> None: ...

    def update(self, ids: Sequence[str], embeddings: Any = None,
               metadatas: Sequence[dict[str, Any]] | None = None,
               documents: Sequence[str] | None = None) -> None: ...

    def delete(self, ids: Sequence[str] | None = None,
               where: dict[str, Any] | None = None) -> None: ...


class ChromaClient(Protocol):
    def heartbeat(self) -> int: ...

    def list_collections(self) -> Sequence[ChromaCollection]: ...

    def get_collection(self, name: str, embedding_function: None = None) -> ChromaCollection: ...

    def get_or_create_collection(self, name: str, embedding_function: None = None,
                                 metadata: dict[str, Any] | None = None,
                                 configuration: dict[str, Any] | None = None
                                 ) -> ChromaCollection: ...

    def delete_collection(self, name: str) -> None: ...

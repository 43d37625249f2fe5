"""The Chroma store: one collection per (repo, branch), overlays read with their base.

Embedded (``PersistentClient`` under ``FRESHMARK_HOME/chroma``) or a Chroma server
(``FRESHMARK_CHROMA_URL``); both behave the same to callers. Credentials in the server URL
(``http://user:password@host:8000``) are sent as HTTP basic auth through the client's own auth
settings (``chroma_client_auth_provider``), and never appear in a message: the store's
``location`` and every error name the URL redacted (``http://***@host:8000``). Vectors are
always ours (``embedding_function=None``): ``get_collection`` without it would attach Chroma's
default embedder, which downloads a model at run time.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import ParseResult, unquote, urlparse

import chromadb
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import ChromaError

from freshmark.adapters.store.calls import guard
from freshmark.adapters.store.collection import BranchIndex, manifest_metadata, manifest_of
from freshmark.adapters.store.layered import LayeredIndex
from freshmark.core.errors import (
    BaseGone,
    BaseInUse,
    ConfigError,
    EmbedderMismatch,
    NotIndexed,
    StoreNotWritable,
    StoreUnavailable,
)
from freshmark.core.manifest import COLLECTION_PREFIX, Manifest, collection_name
from freshmark.core.overlay import MAX_CHAIN_DEPTH, OverlayBase
from freshmark.core.ports import BranchView
from freshmark.core.redact import redact
from freshmark.core.settings import Settings


class Store:
    """The set of branch collections in one Chroma (embedded or server)."""

    def __init__(self, client: Any, location: str):
        self._client = client
        self.location = location

    @classmethod
    def open(cls, settings: Settings) -> Store:
        if settings.chroma_url:
            return cls._open_server(settings.chroma_url)
        return cls._open_embedded(settings.chroma_path)

    @classmethod
    def _open_server(cls, url: str) -> Store:
        shown = redact(url if "://" in url else f"http://{url}")
        try:
            parsed = urlparse(url if "://" in url else f"http://{url}")
            port = parsed.port
        except ValueError as exc:
            raise ConfigError(f"FRESHMARK_CHROMA_URL is not a URL: {shown!r}") from exc
        if not parsed.hostname:
            raise ConfigError(f"FRESHMARK_CHROMA_URL is not a URL: {shown!r}")
        provider, credentials = _basic_auth(parsed, shown)
        settings = ChromaSettings(anonymized_telemetry=False,
                                  chroma_client_auth_provider=provider,
                                  chroma_client_auth_credentials=credentials)
        try:
            client = guard(
                f"connect to the Chroma server at {shown}",
                lambda: chromadb.HttpClient(
                    host=parsed.hostname or "127.0.0.1",
                    port=port or (443 if parsed.scheme == "https" else 8000),
                    ssl=parsed.scheme == "https",
                    settings=settings,
                ),
            )
            guard(f"reach the Chroma server at {shown}", client.heartbeat)
        except StoreUnavailable:
            raise
        except Exception as exc:
            if _refused(exc):
                raise StoreUnavailable(f"the Chroma server at {shown} refused access (401/403); "
                                       "give its user and password in FRESHMARK_CHROMA_URL, "
                                       "http://user:password@host:port") from exc
            raise
        return cls(client, shown)

    @classmethod
    def _open_embedded(cls, path: Path) -> Store:
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StoreNotWritable(
                f"store directory {path} is not writable: {exc.strerror}"
            ) from exc
        client = chromadb.PersistentClient(
            path=str(path), settings=ChromaSettings(anonymized_telemetry=False)
        )
        return cls(client, str(path))

    # -- collections ------------------------------------------------------------------------
    def branch(self, repo_key: str, branch: str, *, layered: bool = True,
               cached_reads: bool = True) -> BranchView | None:
        """The branch's index, or None if it was never indexed: its collection, read together
        with its base when it is an overlay unless ``layered`` is False.

        ``cached_reads=False`` for a view that writes (an index run): its reads go to the store,
        never to what this process cached of an overlay. Raises ``BaseGone`` for an overlay
        whose base is no longer indexed."""
        own = self.own_branch(repo_key, branch)
        if own is None or not layered or not own.manifest.overlay:
            return own
        return self._layered(own, cached_reads)

    def _layered(self, own: BranchIndex, cached_reads: bool, depth: int = 0) -> LayeredIndex:
        """``own`` (an overlay collection) read together with its base, recursively for chains.

        Raises ``BaseGone`` when the base is no longer indexed, or the chain loops or runs
        deeper than the indexer ever builds (a damaged manifest)."""
        base = OverlayBase.of(own.manifest)
        if base is None:
            raise ValueError(f"{own.name} is not an overlay")
        label = f"{own.manifest.repo}@{own.manifest.branch}"
        if depth > MAX_CHAIN_DEPTH:
            raise BaseGone(f"branch {label} is layered deeper than {MAX_CHAIN_DEPTH}; "
                           "index it again")
        below_own = self.own_branch(base.repo_key, base.branch)
        if below_own is None or below_own.manifest.embedder != own.manifest.embedder:
            raise BaseGone(f"branch {label} is layered on {base.branch!r}, which is no longer "
                           f"indexed; run: freshmark index --branch {own.manifest.branch}")
        below: BranchView = self._layered(below_own, cached_reads, depth + 1) \
            if below_own.manifest.overlay else below_own
        return LayeredIndex(own, below, cached_reads=cached_reads)

    def own_branch(self, repo_key: str, branch: str) -> BranchIndex | None:
        """The branch's own collection (for an overlay: without its base), or None."""
        collection = self._get(collection_name(repo_key, branch))
        if collection is None:
            return None
        manifest = manifest_of(collection)
        if manifest and manifest.repo_key == repo_key and manifest.branch == branch:
            return BranchIndex(self._client, collection, manifest)
        return None

    def require_branch(self, repo_key: str, branch: str, repo_name: str = "") -> BranchView:
        index = self.branch(repo_key, branch)
        if index is None or (index.manifest.commit is None and not index.manifest.layers):
            label = f"{repo_name or repo_key}@{branch}"
            raise NotIndexed(f"branch {label} has not been indexed yet; run: freshmark index")
        return index

    def create_branch(self, manifest: Manifest, below: BranchView | None = None) -> BranchView:
        """Get or create the collection for a new manifest; refuses to mix embedders. With
        ``below`` (the base a new overlay is layered on) the collection is returned read
        together with it, as a view that writes (``cached_reads=False``)."""
        own = self._create(manifest)
        return LayeredIndex(own, below, cached_reads=False) if below is not None else own

    def _create(self, manifest: Manifest) -> BranchIndex:
        existing = self.own_branch(manifest.repo_key, manifest.branch)
        if existing is not None:
            if existing.manifest.embedder != manifest.embedder:
                raise EmbedderMismatch(
                    f"collection {existing.name} holds vectors of {existing.manifest.embedder!r}, "
                    f"not {manifest.embedder!r}; use the same embedder or drop the branch index"
                )
            return existing
        metadata = manifest_metadata(manifest)
        collection = guard(
            "create a collection",
            lambda: self._client.get_or_create_collection(
                manifest.collection,
                embedding_function=None,
                metadata=metadata,
                configuration={"hnsw": {"space": "cosine"}},
            ),
        )
        return BranchIndex(self._client, collection, manifest)

    def drop_branch(self, repo_key: str, branch: str, *, force: bool = False) -> bool:
        """Drop the branch's own collection (an overlay's base is left alone). Refuses a base
        that overlays are layered on (``BaseInUse``) unless ``force``: they would lose the
        chunks of every file they did not change."""
        index = self.own_branch(repo_key, branch)
        if index is None:
            return False
        dependents = self.overlays_on(repo_key, branch)
        if dependents and not force:
            names = ", ".join(sorted(m.branch for m in dependents)[:10])
            raise BaseInUse(f"{index.manifest.repo}@{branch} is the base of "
                            f"{len(dependents)} branch overlay(s): {names}; retire them first")
        guard("drop a collection", lambda: self._client.delete_collection(index.name))
        return True

    def overlays_on(self, repo_key: str, branch: str,
                    manifests: Iterable[Manifest] | None = None) -> list[Manifest]:
        """Manifests of the overlays layered directly on (repo_key, branch)."""
        return [m for m in (manifests if manifests is not None else self.list_manifests())
                if m.overlay and m.overlay.get("repo_key") == repo_key
                and m.overlay.get("branch") == branch]

    def list_manifests(self, repo: str | None = None) -> list[Manifest]:
        """Manifests of every branch collection, optionally of one repo (by id or key)."""
        out: list[Manifest] = []
        for name in self._all_names():
            if not name.startswith(COLLECTION_PREFIX + "-"):
                continue
            collection = self._get(name)
            manifest = manifest_of(collection) if collection is not None else None
            if manifest and (repo is None or repo in (manifest.repo, manifest.repo_key)):
                out.append(manifest)
        return sorted(out, key=lambda m: (m.repo, m.branch))

    # -- helpers ----------------------------------------------------------------------------
    def _all_names(self) -> list[str]:
        collections = guard("list collections", self._client.list_collections)
        return [c if isinstance(c, str) else c.name for c in collections]

    def _get(self, name: str) -> Any | None:
        try:
            return guard(
                "open a collection",
                lambda: self._client.get_collection(name, embedding_function=None),
            )
        except StoreUnavailable:
            raise
        except Exception as exc:  # chromadb raises NotFoundError (or ValueError in older clients)
            if "does not exist" in str(exc) or type(exc).__name__ == "NotFoundError":
                return None
            raise



_BASIC_AUTH = "chromadb.auth.basic_authn.BasicAuthClientProvider"


def _basic_auth(parsed: ParseResult, shown: str) -> tuple[str | None, str | None]:
    """The chromadb client's auth provider and credentials that send a URL's ``user:password``
    as HTTP basic auth ((None, None) for a URL without credentials); ``ConfigError`` for a user
    without a password."""
    if parsed.username is None:
        return None, None
    if parsed.password is None:
        raise ConfigError(f"FRESHMARK_CHROMA_URL {shown} names a user but no password; write "
                          "http://user:password@host:port (basic auth) or no credentials")
    return _BASIC_AUTH, f"{unquote(parsed.username)}:{unquote(parsed.password)}"


def _refused(exc: BaseException) -> bool:
    """Whether the server answered 401 or 403 (chromadb raises its own error types for a
    Chroma answer and a bare exception with the body for a proxy's)."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    code = exc.code() if isinstance(exc, ChromaError) else None
    head = str(exc)[:200]
    return status in (401, 403) or code in (401, 403) \
        or any(word in head for word in ("401", "403", "Unauthorized", "Forbidden"))

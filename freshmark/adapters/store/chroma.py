"""The Chroma store: one collection per (repo, branch), overlays read with their base.

Embedded (``PersistentClient`` under ``FRESHMARK_HOME/chroma``), one Chroma server
(``FRESHMARK_CHROMA_URL``) or several (``FRESHMARK_CHROMA_URLS``); all behave the same to
callers. With several, every collection of a repository lives on the repository's home server
(``core/placement.py``); a collection not found there is looked for on the others, where it
stays until ``freshmark shards move`` brings it home (``services/upkeep/shards.py``), so
reads and writes keep using the copy that exists while a server is added. Connections and
credentials: ``shard.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from freshmark.adapters.store.client import ChromaCollection
from freshmark.adapters.store.collection import BranchIndex, manifest_metadata, manifest_of
from freshmark.adapters.store.layered import LayeredIndex
from freshmark.adapters.store.names import REGISTRY, NameRegistry
from freshmark.adapters.store.shard import Shard
from freshmark.core.errors import (
    BaseGone,
    BaseInUse,
    EmbedderMismatch,
    NotIndexed,
    StoreUnavailable,
)
from freshmark.core.manifest import COLLECTION_PREFIX, Manifest, collection_name
from freshmark.core.overlay import MAX_CHAIN_DEPTH, OverlayBase
from freshmark.core.placement import home_index, parse_servers
from freshmark.core.ports import BranchView
from freshmark.core.settings import Settings

REPO_KEY_PREFIXES = ("path:", "id:")  # a repository key, not a name (``services/repos``)


class Store:
    """The set of branch collections in one Chroma or spread over several (``shards``)."""

    def __init__(self, shards: Sequence[Shard]):
        if not shards:
            raise ValueError("a store needs at least one Chroma")
        self.shards = tuple(shards)
        self._identities = tuple(shard.identity for shard in self.shards)
        self.location = ", ".join(shard.location for shard in self.shards)
        # Servers the last listing could not reach: location -> error (no credentials).
        self.unreachable: dict[str, str] = {}

    @classmethod
    def open(cls, settings: Settings) -> Store:
        urls = settings.chroma_server_urls
        if not urls:
            return cls([Shard.embedded(settings.chroma_path)])
        variable = settings.chroma_variable
        shards = [Shard.server(server, variable) for server in parse_servers(urls, variable)]
        if len(shards) == 1:
            shards[0].require()  # the one server: nothing works without it, say so at once
        return cls(shards)

    # -- placement --------------------------------------------------------------------------
    def _shown(self, shard: Shard) -> str:
        """The server a branch's errors name: only when there are several to tell apart."""
        return shard.location if len(self.shards) > 1 else ""

    def home(self, repo_key: str) -> Shard:
        """The Chroma that holds (or will hold) every collection of ``repo_key``."""
        return self.shards[home_index(repo_key, self._identities)]

    def _search_order(self, repo_key: str) -> list[Shard]:
        home = self.home(repo_key)
        return [home] + [shard for shard in self.shards if shard is not home]

    def _find(self, repo_key: str, name: str) -> tuple[Shard, ChromaCollection] | None:
        """Where collection ``name`` of ``repo_key`` is: its home first, then the others (a
        collection not yet moved home after a server was added)."""
        home = self.home(repo_key)
        for shard in self._search_order(repo_key):
            try:
                collection = shard.get(name)
            except StoreUnavailable as exc:
                if shard is home:
                    raise StoreUnavailable(f"{exc} (the server that holds this repository; "
                                           "retry when it is back)") from exc
                continue  # a copy left there by a move cut short is found again when it is back
            if collection is not None:
                return shard, collection
        return None

    def names(self) -> NameRegistry:
        """The store's repository names (``names.py``) on the server placement gives the
        registry, written from the manifests the first time (a store from before it)."""
        home = self.home(REGISTRY)
        registry = NameRegistry(home.get(REGISTRY) or home.create(REGISTRY, {"freshmark": "names"}))
        registry.ensure_seeded(self._every_manifest)
        return registry

    def _every_manifest(self) -> list[Manifest]:
        """Every manifest, from every server: ``StoreUnavailable`` rather than a partial list
        (the registry is seeded once, from a complete one)."""
        manifests = self.list_manifests()
        if self.unreachable:
            raise StoreUnavailable("; ".join(self.unreachable.values()))
        return manifests

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
        found = self._find(repo_key, collection_name(repo_key, branch))
        if found is None:
            return None
        shard, collection = found
        manifest = manifest_of(collection)
        if manifest and manifest.repo_key == repo_key and manifest.branch == branch:
            return BranchIndex(shard.client, collection, manifest, self._shown(shard))
        return None

    def require_branch(self, repo_key: str, branch: str, repo_name: str = "",
                       path_typed: str = "") -> BranchView:
        """The branch's index; NotIndexed names the command that builds it, with the path the
        caller typed (``path_typed``) when there is one."""
        index = self.branch(repo_key, branch)
        if index is None or (index.manifest.commit is None and not index.manifest.layers):
            # A repository never indexed has no name of its own yet: its directory's may be
            # another repository's, so it is named by the path typed.
            own = self.names().name_of(repo_key) if path_typed else repo_name
            label = f"{own or path_typed or repo_name or repo_key}@{branch}"
            where = path_typed or "PATH"
            raise NotIndexed(f"branch {label} has not been indexed yet; run: freshmark index "
                             f"{where} --branch {branch}"
                             f"{'' if path_typed else ' (PATH: its working copy)'}")
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
        home = self.home(manifest.repo_key)
        collection = home.create(manifest.collection, manifest_metadata(manifest))
        return BranchIndex(home.client, collection, manifest, self._shown(home))

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
        # Every copy: one left on another server (a move cut short) would be found again.
        for shard in self.shards:
            if shard.get(index.name) is not None:
                shard.delete(index.name)
        return True

    def overlays_on(self, repo_key: str, branch: str,
                    manifests: Iterable[Manifest] | None = None) -> list[Manifest]:
        """Manifests of the overlays layered directly on (repo_key, branch)."""
        return [m for m in (manifests if manifests is not None else self.list_manifests())
                if m.overlay and m.overlay.get("repo_key") == repo_key
                and m.overlay.get("branch") == branch]

    def list_manifests(self, repo: str | None = None) -> list[Manifest]:
        """Manifests of every branch collection, optionally of one repo (by id or key)."""
        found: dict[str, Manifest] = {}
        placed = self.placed_manifests()
        if repo is not None:
            self._require_reachable(repo, placed)
        for shard, manifest in placed:
            if repo is not None and repo not in (manifest.repo, manifest.repo_key):
                continue
            # A collection on two servers (a move cut short): the home copy is the one read.
            if manifest.collection not in found or shard is self.home(manifest.repo_key):
                found[manifest.collection] = manifest
        return sorted(found.values(), key=lambda m: (m.repo, m.branch))

    def placed_manifests(self) -> list[tuple[Shard, Manifest]]:
        """Every branch collection's manifest with the Chroma it is on (a collection on two
        servers, a move cut short, is listed twice). Of several servers, one that cannot be
        reached is left out and named in ``unreachable`` (location -> error): the
        repositories on the others are still listed."""
        out: list[tuple[Shard, Manifest]] = []
        self.unreachable = {}
        for shard in self.shards:
            try:
                collections = shard.collections()
            except StoreUnavailable as exc:
                if len(self.shards) == 1:
                    raise
                self.unreachable[shard.location] = str(exc)
                continue
            for collection in collections:
                if not collection.name.startswith(COLLECTION_PREFIX + "-"):
                    continue
                manifest = manifest_of(collection)
                if manifest is not None:
                    out.append((shard, manifest))
        return out

    def _require_reachable(self, repo: str, placed: list[tuple[Shard, Manifest]]) -> None:
        """``StoreUnavailable`` when a repository (its key, or a name) may be on a server that
        could not be listed: its home server, or, for a name found on no server, any."""
        if not self.unreachable:
            return
        if repo.startswith(REPO_KEY_PREFIXES):
            home = self.home(repo).location
            if home in self.unreachable:
                raise StoreUnavailable(f"{self.unreachable[home]} (the server that holds this "
                                       "repository; retry when it is back)")
            return
        if not any(repo == manifest.repo for _, manifest in placed):
            down = "; ".join(self.unreachable.values())
            raise StoreUnavailable(f"repository {repo[:200]!r} may be on a Chroma server that "
                                   f"cannot be reached: {down}; retry when it is back")

"""Resolve what a user names as a repository (a path, or a configured repo id) to its index key."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from freshmark.adapters.git.mirrors import mirror_path
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.names import NameRegistry
from freshmark.core.config import Config
from freshmark.core.errors import (
    BadInput,
    ConfigError,
    NotIndexed,
    RepositoryGone,
    StoreUnavailable,
)
from freshmark.core.manifest import Manifest
from freshmark.core.settings import Settings


@dataclass(frozen=True)
class RepoHandle:
    """A repository as the index knows it: ``key`` names collections, ``path`` holds its git."""

    key: str
    name: str
    path: Path
    repo_id: str | None = None
    tracked_only: bool = False  # work-tree reads limited to tracked files (network callers)

    @property
    def is_working_copy(self) -> bool:
        """Indexed from a working copy (``path:`` key), not a configured remote's mirror."""
        return self.repo_id is None and self.key.startswith("path:")

    def open(self) -> GitRepo:
        if not self.path.exists():
            raise RepositoryGone(
                f"repository {self.name} is gone from {self.path} (moved or deleted since it was "
                "indexed); index it again from its new location"
            )
        repo = GitRepo.open(self.path)
        repo.tracked_only = self.tracked_only
        return repo


def _exists(path: Path) -> bool:
    """``path.exists()``, False for names the OS cannot take (NUL bytes, over-long)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def unique_name(key: str, path: Path, wanted: str, taken: Mapping[str, str]) -> str:
    """A name for the repository ``key`` that no other indexed repository uses.

    ``taken`` maps names in use to their keys. A key keeps the name it already has; a new one
    takes ``wanted`` (its directory name) if free, else its parent-qualified name (``b/fresh``),
    else that plus a digest of its key, so two checkouts called ``fresh`` never share a name.
    """
    for name, owner in taken.items():
        if owner == key:
            return name
    choices = name_choices(key, path, wanted)
    return next((name for name in choices if name not in taken), choices[-1])


def name_choices(key: str, path: Path, wanted: str) -> tuple[str, str, str]:
    """The names a new repository may take, in order: its directory name, its
    parent-qualified name, that plus a digest of its key (unique to the key)."""
    qualified = f"{path.parent.name}/{wanted}" if path.parent.name else wanted
    return wanted, qualified, f"{qualified}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def _only_candidate(arg: str, manifests: list[Manifest]) -> Manifest | None:
    """The one repository ``arg`` names; an error listing them when it names several."""
    by_key = {m.repo_key: m for m in manifests}
    if len(by_key) > 1:
        listed = "; ".join(f"{m.repo} at {m.repo_path or k}" for k, m in sorted(by_key.items()))
        raise BadInput(f"repository name {arg!r} is ambiguous: {listed}; pass its path instead")
    return next(iter(by_key.values()), None)


def resolve_repo(
    arg: str, settings: Settings, config: Config, store: Store | None = None
) -> RepoHandle:
    """A path to a git repository, or the id of a configured (cluster) or indexed repository.
    A bare name that is both (a clone ``log`` in the current directory, and the configured
    ``log``) is the path only when the path's repository is indexed."""
    candidate = Path(arg).expanduser()
    configured = configured_id(config, arg)
    if _exists(candidate):
        repo = GitRepo.discover(candidate)
        if configured is None or (store is not None and _indexed_key(store, repo.key())):
            return RepoHandle(key=repo.key(), name=repo.default_name(), path=repo.path)
    if configured is not None:
        return RepoHandle(key=f"id:{arg}", name=arg, path=mirror_path(settings, arg), repo_id=arg)
    if store is not None:
        gone_key = f"path:{candidate.resolve()}"
        if _indexed_key(store, gone_key):
            raise RepositoryGone(
                f"repository at {candidate.resolve()} was indexed but is gone (moved or deleted); "
                "index it again from its new location"
            )
        manifest = _only_candidate(arg, store.list_manifests(arg))
        if manifest is not None:
            path = Path(manifest.repo_path)
            return RepoHandle(
                key=manifest.repo_key,
                name=manifest.repo,
                path=path,
                repo_id=arg if manifest.repo_key == f"id:{arg}" else None,
            )
    raise NotIndexed(
        f"no repository {arg!r}: not a path on this machine, not in the config, never indexed"
        + _names_like(arg, store)
    )


def configured_id(config: Config, arg: str) -> str | None:
    """``arg`` when it is written as a bare name (no path separator, not ``.``) and names a
    configured repository; None otherwise."""
    if "/" in arg or arg in (".", "..") or arg.startswith("~"):
        return None
    try:
        return arg if config.repo(arg) is not None else None
    except ConfigError:
        return None


def _names_like(arg: str, store: Store | None) -> str:
    """What to name instead of ``arg``: indexed repositories like it, else where the names are
    listed. Only an error pays for listing the manifests."""
    like = names_like(arg, indexed_names(store)) if store is not None else []
    if like:
        return "; indexed repositories like it: " + ", ".join(like)
    return "; `freshmark audit` lists the indexed repositories"


def indexed_names(store: Store) -> set[str]:
    """The names of the indexed repositories; none when the store cannot be read."""
    try:
        return {m.repo for m in store.list_manifests()}
    except StoreUnavailable:
        return set()


def names_like(arg: str, names: set[str], most: int = 5) -> list[str]:
    """The ``names`` that hold ``arg`` or whose last part is close to it (a typo), sorted."""
    # A name's last part too: ``seaborn`` of ``mwaskom+seaborn`` or ``b/seaborn``.
    tail = {name: re.split(r"[/+]", name)[-1].lower() for name in sorted(names)}
    close = set(difflib.get_close_matches(arg.lower(), set(tail.values()), n=3, cutoff=0.6))
    like = [name for name in tail if arg.lower() in name.lower()] or \
        [name for name in tail if tail[name] in close]
    return like[:most]


def _indexed_key(store: Store, key: str) -> bool:
    """Whether ``key`` has an indexed branch; False when its server cannot tell (the lookup
    by name that follows then says whether the repository may be on a server that is down)."""
    try:
        return bool(store.list_manifests(key))
    except StoreUnavailable:
        return False


@dataclass(frozen=True)
class RepoRef:
    """Identity of the indexed repository: ``key`` names collections, ``name`` is for people."""

    key: str
    name: str

    @classmethod
    def of(cls, repo: GitRepo, repo_id: str | None, store: Store | None = None,
           branch: str | None = None) -> RepoRef:
        """Configured repos are named by their (unique) id; a repo indexed by path takes its
        directory name unless another indexed repository already has it (``unique_name``).
        When ``branch`` is indexed already its manifest names the repository: a run over an
        indexed branch reads one collection, not every manifest of the store."""
        if repo_id:
            return cls(key=f"id:{repo_id}", name=repo_id)
        key, name = repo.key(), repo.default_name()
        if store is not None:
            indexed = store.own_branch(key, branch) if branch else None
            name = indexed.manifest.repo if indexed is not None else \
                registered_name(store.names(), key, repo.path, name)
        return cls(key=key, name=name)


def registered_name(registry: NameRegistry, key: str, path: Path, wanted: str) -> str:
    """The name ``key`` holds in the store's registry, or the first of ``unique_name``'s
    choices it can claim there: a few reads by id, whatever the repositories held."""
    held = registry.name_of(key)
    if held is not None:
        return held
    for name in name_choices(key, path, wanted):
        if registry.claim(name, key):
            return name
    raise AssertionError("the last choice carries the key's digest")  # pragma: no cover

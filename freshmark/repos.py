"""Resolve what a user names as a repository (a path, or a configured repo id) to its index key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from freshmark.config import Config
from freshmark.errors import ConfigError, NotIndexed, RepositoryGone
from freshmark.gitrepo import GitRepo
from freshmark.settings import Settings
from freshmark.store import Store


@dataclass(frozen=True)
class RepoHandle:
    """A repository as the index knows it: ``key`` names collections, ``path`` holds its git."""

    key: str
    name: str
    path: Path
    repo_id: str | None = None

    def open(self) -> GitRepo:
        if not self.path.exists():
            raise RepositoryGone(
                f"repository {self.name} is gone from {self.path} (moved or deleted since it was "
                "indexed); index it again from its new location"
            )
        return GitRepo.open(self.path)


def mirror_path(settings: Settings, repo_id: str) -> Path:
    """Where workers keep the bare mirror of a configured remote."""
    return settings.mirrors_dir / f"{repo_id}.git"


def resolve_repo(
    arg: str, settings: Settings, config: Config, store: Store | None = None
) -> RepoHandle:
    """A path to a git repository, or the id of a configured (cluster) or indexed repository."""
    candidate = Path(arg).expanduser()
    if candidate.exists():
        repo = GitRepo.discover(candidate)
        return RepoHandle(key=repo.key(), name=repo.default_name(), path=repo.path)
    try:
        configured = config.repo(arg)
    except ConfigError:
        configured = None
    if configured is not None:
        return RepoHandle(key=f"id:{arg}", name=arg, path=mirror_path(settings, arg), repo_id=arg)
    if store is not None:
        gone_key = f"path:{candidate.resolve()}"
        if store.list_manifests(gone_key):
            raise RepositoryGone(
                f"repository at {candidate.resolve()} was indexed but is gone (moved or deleted); "
                "index it again from its new location"
            )
        for manifest in store.list_manifests(arg):
            path = Path(manifest.repo_path)
            return RepoHandle(
                key=manifest.repo_key,
                name=manifest.repo,
                path=path,
                repo_id=arg if manifest.repo_key == f"id:{arg}" else None,
            )
    raise NotIndexed(
        f"no repository {arg!r}: not a path on this machine, not in the config, never indexed"
    )

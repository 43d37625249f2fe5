"""Bare mirrors of the configured remotes, kept by workers under ``settings.mirrors_dir``.

A mirror maps the remote's ``refs/heads/*`` onto its own ``refs/heads/*`` with a forced refspec
and prunes on every fetch, so after ``sync_mirror`` its branches are exactly the remote's: a
forced push moves a head backwards, a deleted branch disappears. Jobs diff and index from the
mirror, never from what a webhook payload claims.

Processes on one host share a mirror (every branch of a repository uses it); a ``flock`` on a
file next to it is held during every git write freshmark makes there (clone, fetch, ``HEAD``,
removal), so a process holding it knows any git lock file inside is a killed process's, and
removes it before writing (``stale_locks``). A new mirror is cloned into a temporary directory
and renamed into place, so a crash mid-clone leaves no half mirror behind (its staging
directory is removed by the next holder).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FetchPrune

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.git.stale_locks import remove_abandoned_clones, remove_stale_git_locks
from freshmark.core.config import RepoConfig
from freshmark.core.errors import ConfigError, RetryableError
from freshmark.core.redact import redact
from freshmark.core.settings import Settings

REMOTE_NAME = "origin"
MIRROR_REFSPEC = "+refs/heads/*:refs/heads/*"


def mirror_path(settings: Settings, repo_id: str) -> Path:
    """Where workers keep the bare mirror of a configured remote."""
    return settings.mirrors_dir / f"{repo_id}.git"

class RemoteUnavailable(RetryableError):
    """The remote could not be cloned or fetched (network, host down, repository moved)."""


@dataclass(frozen=True)
class MirrorState:
    """A mirror after sync: its path and branch heads before and after the fetch."""

    path: Path
    heads: dict[str, str]
    previous_heads: dict[str, str]
    cloned: bool

    @property
    def deleted_branches(self) -> list[str]:
        return sorted(set(self.previous_heads) - set(self.heads))

    @property
    def moved_branches(self) -> list[str]:
        return sorted(b for b, sha in self.heads.items() if self.previous_heads.get(b) != sha)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the mirror's writer lock, with what killed holders left behind cleared away."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            remove_abandoned_clones(path)
            remove_stale_git_locks(path)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remote_credentials(repo: RepoConfig, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(user, token) for a private remote: ``token_env`` first, then ``token_file``; None
    when the repo names neither. A named but empty source is a ``ConfigError``."""
    if repo.token_env:
        token = env.get(repo.token_env, "").strip()
        source = f"${repo.token_env}"
    elif repo.token_file:
        try:
            token = Path(repo.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"repo {repo.id}: cannot read token_file ({exc.strerror})") from exc
        source = "token_file"
    else:
        return None
    if not token:
        raise ConfigError(f"repo {repo.id}: {source} is empty")
    return repo.token_user, token


def _callbacks(credentials: tuple[str, str] | None) -> pygit2.RemoteCallbacks | None:
    if credentials is None:
        return None
    return pygit2.RemoteCallbacks(credentials=pygit2.UserPass(*credentials))


def _create_mirror_remote(repo: pygit2.Repository, name: str, url: str) -> pygit2.Remote:
    return repo.remotes.create(name, url, MIRROR_REFSPEC)


def _clone(url: str, path: Path, callbacks: pygit2.RemoteCallbacks | None = None) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        target = staging / "m.git"
        repo = pygit2.clone_repository(url, str(target), bare=True, remote=_create_mirror_remote,
                                       callbacks=callbacks)
        repo.free()
        target.rename(path)
    except pygit2.GitError as exc:
        raise RemoteUnavailable(f"cannot clone {redact(url)}: {redact(str(exc))}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fetch(url: str, path: Path, callbacks: pygit2.RemoteCallbacks | None = None) -> None:
    repo = pygit2.Repository(str(path))
    try:
        if REMOTE_NAME not in [r.name for r in repo.remotes]:
            repo.remotes.create(REMOTE_NAME, url, MIRROR_REFSPEC)
        elif repo.remotes[REMOTE_NAME].url != url:
            repo.remotes.set_url(REMOTE_NAME, url)  # the config moved the remote
        repo.remotes[REMOTE_NAME].fetch(prune=FetchPrune.PRUNE, callbacks=callbacks)
    except pygit2.GitError as exc:
        raise RemoteUnavailable(
            f"cannot fetch {redact(url)} into {path}: {redact(str(exc))}") from exc
    finally:
        repo.free()


def _point_head(path: Path, preferred: tuple[str, ...]) -> None:
    """Let HEAD name a branch that exists (the first tracked one), so tools that read "the
    checked-out branch" of a mirror (``status``, ``search`` without ``--branch``) work."""
    repo = pygit2.Repository(str(path))
    try:
        local = set(repo.branches.local)
        current = repo.references["HEAD"].target if "HEAD" in repo.references else ""
        wanted = next((b for b in preferred if b in local), None)
        if wanted is None and repo.head_is_unborn and local:
            wanted = min(local)
        if wanted is not None and current != f"refs/heads/{wanted}":
            repo.set_head(f"refs/heads/{wanted}")
    finally:
        repo.free()


def read_heads(path: Path) -> dict[str, str]:
    """Branch -> head sha of an existing mirror ({} if there is none yet)."""
    if not path.exists():
        return {}
    repo = GitRepo.open(path)
    try:
        return repo.branches()
    finally:
        repo.close()


def sync_mirror(settings: Settings, repo: RepoConfig,
                env: Mapping[str, str] | None = None) -> MirrorState:
    """Clone the remote's mirror if missing, else fetch with prune; returns the new heads.
    ``env`` (default ``os.environ``) holds the token a private remote names."""
    path = mirror_path(settings, repo.id)
    callbacks = _callbacks(remote_credentials(repo, os.environ if env is None else env))
    with _locked(path):
        previous = read_heads(path)
        cloned = not path.exists()
        if cloned:
            _clone(repo.url, path, callbacks)
        else:
            _fetch(repo.url, path, callbacks)
        _point_head(path, repo.branches)
        _fetched_stamp(path).write_text(f"{time.time():.3f}\n", encoding="ascii")
        heads = read_heads(path)
        return MirrorState(path=path, heads=heads, previous_heads=previous, cloned=cloned)


def _fetched_stamp(path: Path) -> Path:
    return path.with_name(path.name + ".fetched")


def last_fetched_seconds(settings: Settings, repo_id: str) -> float | None:
    """Unix time of the mirror's last successful clone or fetch (None: never, or unknown)."""
    try:
        return float(_fetched_stamp(mirror_path(settings, repo_id)).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


def remote_branches(url: str) -> list[str] | None:
    """The branch names the remote has now (``git ls-remote --heads``), or None when it cannot
    be reached: a caller that only wants to catch a mistyped name should not block on it."""
    with tempfile.TemporaryDirectory(prefix="freshmark-ls-remote-") as scratch:
        repo = pygit2.init_repository(scratch, bare=True)
        try:
            heads = repo.remotes.create_anonymous(url).list_heads()
        except pygit2.GitError:
            return None
        finally:
            repo.free()
    return sorted(name.removeprefix("refs/heads/") for h in heads
                  if (name := h.name) is not None and name.startswith("refs/heads/"))


def remove_mirror(settings: Settings, repo_id: str) -> bool:
    """Delete a mirror (a repo dropped from the config); True if there was one."""
    path = mirror_path(settings, repo_id)
    with _locked(path):
        _fetched_stamp(path).unlink(missing_ok=True)
        if not path.exists():
            return False
        shutil.rmtree(path)
        return True

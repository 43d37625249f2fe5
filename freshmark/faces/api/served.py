"""What a network caller (HTTP, MCP) may name and ask for: the policy in front of search,
verify and context when the caller is not the owner of this machine.

``repo`` must name a configured repository (its id) or an already indexed one (its name, key
or the path it was indexed from), matched against what this server knows: never opened as
an arbitrary host path, so ``/etc`` and ``/no/such/dir`` get the same answer. Work-tree mode is
only for registered working copies, and reads only files git tracks there. The CLI keeps
accepting any path (``services.repos.resolve_repo``): its caller owns the machine.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from freshmark.adapters.git.mirrors import mirror_path
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.errors import (
    BadInput,
    ConfigError,
    FreshmarkError,
    NotIndexed,
    RepositoryGone,
    StoreUnavailable,
)
from freshmark.core.manifest import Manifest
from freshmark.core.request import MAX_BUDGET_TOKENS as CORE_MAX_BUDGET_TOKENS
from freshmark.core.settings import Settings
from freshmark.services.repos import RepoHandle, indexed_names, names_like

MAX_REPO_CHARS = 256
# Each verify line costs a tree lookup and maybe a blob read; a prompt never needs more.
MAX_VERIFY_LINES = 2000
# Context budgets: one bound for every face (``core.request``).
MAX_BUDGET_TOKENS = CORE_MAX_BUDGET_TOKENS


def check_repo_name(arg: object) -> str:
    """``arg`` if it can name a repository at all; ``BadInput`` (one line) otherwise."""
    if not isinstance(arg, str) or not arg.strip():
        raise BadInput("repo must be a repository id or name")
    if len(arg) > MAX_REPO_CHARS:
        raise BadInput(f"repo is {len(arg)} characters, over the {MAX_REPO_CHARS} limit")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in arg):
        raise BadInput("repo contains control characters (NUL, newline...)")
    return arg.strip()


def _unknown(name: str, store: Store) -> NotIndexed:
    # A path is not echoed, nor answered with names: the answer must read the same for every
    # path on this host.
    is_path = "/" in name or "\\" in name
    shown = "of that path" if is_path else repr(name if len(name) <= 80 else name[:77] + "...")
    like = [] if is_path else names_like(name, indexed_names(store))
    hint = f" (indexed repositories like it: {', '.join(like)})" if like else ""
    return NotIndexed(f"no repository {shown} is configured or indexed on this server{hint}; "
                      "name one by the id of its [[repos]] entry in the config, or by the name "
                      "it was indexed under")


def _matches(manifest: Manifest, name: str) -> bool:
    return name in (manifest.repo, manifest.repo_key, manifest.repo_path) \
        or manifest.repo_key == f"path:{name.rstrip('/')}"


def _configured(name: str, settings: Settings, config: Config) -> RepoHandle | None:
    try:
        config.repo(name)
    except ConfigError:
        return None
    return RepoHandle(key=f"id:{name}", name=name, path=mirror_path(settings, name),
                      repo_id=name, tracked_only=True)


def _indexed(name: str, store: Store) -> RepoHandle | None:
    found = [m for m in store.list_manifests() if _matches(m, name)]
    if not found and store.unreachable:  # it may be on a server that did not answer
        raise StoreUnavailable("repository not found on the Chroma servers that answered: "
                               + "; ".join(store.unreachable.values()))
    if not found:
        return None
    exact = [m for m in found if m.repo_key in (name, f"id:{name}")]
    manifest = (exact or found)[0]
    repo_id = manifest.repo_key.removeprefix("id:") if manifest.repo_key.startswith("id:") \
        else None
    return RepoHandle(key=manifest.repo_key, name=manifest.repo,
                      path=Path(manifest.repo_path), repo_id=repo_id, tracked_only=True)


def served_repo(arg: object, *, settings: Settings, config: Config, store: Store,
                worktree: bool = False, copy_needed: bool = True) -> RepoHandle:
    """The repository a network caller names, or a one-line error that reveals nothing about
    the host's filesystem: BadInput, NotIndexed, RepositoryGone (unless ``copy_needed`` is
    False: dropping an index needs no copy of the repository)."""
    name = check_repo_name(arg)
    handle = _configured(name, settings, config) or _indexed(name, store)
    if handle is None:
        raise _unknown(name, store)
    if copy_needed and not handle.path.exists() and handle.repo_id is not None \
            and not store.list_manifests(handle.key):
        raise NotIndexed(f"repository {handle.name} is configured but not indexed yet; a "
                         "worker indexes it after the next push or scheduled run (or run: "
                         f"freshmark branch index {handle.name} BRANCH)")
    if copy_needed and not handle.path.exists():
        raise RepositoryGone(f"repository {handle.name} was indexed but its copy is gone; "
                             "index it again")
    if worktree and not handle.is_working_copy:
        raise BadInput(f"worktree mode needs a registered working copy; {handle.name} is a "
                       "remote's mirror: drop worktree")
    return handle


def check_verify_lines(content: object) -> None:
    """``BadInput`` for a snippet list longer than a network caller may send."""
    if isinstance(content, str) and len(content.splitlines()) > MAX_VERIFY_LINES:
        raise BadInput(f"more than {MAX_VERIFY_LINES} lines to verify; split the list")


def check_budget(budget: object) -> None:
    """``BadInput`` for a context budget above what a network caller may ask for."""
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > MAX_BUDGET_TOKENS:
        raise BadInput(f"budget {budget} is over the {MAX_BUDGET_TOKENS}-token limit")


def without_host_path(text: str, handle: RepoHandle) -> str:
    """``text`` with the repository's location on this host replaced by its name."""
    for where in sorted({str(handle.path), str(handle.path.resolve())}, key=len, reverse=True):
        text = text.replace(where, handle.name)
    return text


def scrubbed(exc: FreshmarkError, handle: RepoHandle) -> FreshmarkError:
    """The same error with the repository's location on this host replaced by its name."""
    clean = copy.copy(exc)
    clean.args = (without_host_path(str(exc), handle),)
    return clean


@contextmanager
def no_host_paths(handle: RepoHandle) -> Iterator[None]:
    """Errors raised inside name the repository, never where it lives on the server."""
    try:
        yield
    except FreshmarkError as exc:
        raise scrubbed(exc, handle) from None

"""A drop or a retirement excludes the branch's index runs, and a CLI index run in a
deployment with Redis excludes the workers' runs and drops of its branch: each holds the
branch's lock.

A drop deletes a branch's collection, lexical index and manifest; an index run of the branch
going on at the same time would leave a half-written branch, or a manifest naming a collection
that is gone. So with Redis (a cluster, where workers run the index jobs) ``BranchGuard``
takes each branch's lock as a whole-branch job does (``keys.branch_lock``, free only while no
layer's run holds its own), marks the branch as wanted while it waits so no new layer run
starts meanwhile (``branch_lock.Wants``), and gives up after ``wait_seconds`` with
``BranchBusy`` (retry later). The lock is renewed by a heartbeat until everything of the branch
is gone (or the CLI's run is over: ``cli_run_held``). Embedded (no Redis) index runs take
no lock, and neither does a drop.

The lock names the repository as the workers' jobs do: a configured repository by its id, a
watched working copy by ``jobspec.working_copy_label`` of its path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from redis import Redis

from freshmark.adapters import keys
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.queue import branch_lock, jobs
from freshmark.core import jobspec
from freshmark.core.config import Config
from freshmark.core.errors import BranchBusy
from freshmark.core.settings import Settings

# A drop waits this long for the runs in its way (a hot layer's run takes seconds).
DROP_WAIT_SECONDS = 10.0
# The waiting drop's mark is renewed at every poll; this is how long it outlives a dead drop.
WANTS_SECONDS = 2.0


def job_repo(repo_key: str) -> str:
    """The repository's name in job keys and locks, from its index key (``RepoRef.key``)."""
    kind, _, rest = repo_key.partition(":")
    if kind == "id":
        return rest
    if kind == "path":
        return jobspec.working_copy_label(Path(rest))
    return repo_key


@dataclass(frozen=True)
class BranchGuard:
    """Holds branches' locks for a drop; ``client`` None (embedded, or a caller that holds the
    lock already) holds nothing."""

    client: Redis | None
    layers: tuple[str, ...] = ()
    timings: jobspec.Timings = jobspec.Timings()
    wait_seconds: float = DROP_WAIT_SECONDS

    @contextmanager
    def holding(self, branches: Iterable[tuple[str, str]]) -> Iterator[None]:
        """Hold the lock of every (repo_key, branch) for the ``with`` block; ``BranchBusy`` if
        one stays taken. Taken in sorted order, so two drops never wait on each other."""
        with ExitStack() as stack:
            if self.client is not None:
                for repo_key, branch in sorted(set(branches)):
                    stack.enter_context(self._held(self.client, job_repo(repo_key), branch))
            yield

    @contextmanager
    def _held(self, client: Redis, repo: str, branch: str) -> Iterator[None]:
        name = keys.branch_lock(repo, branch)
        excludes = keys.layer_locks(repo, branch, self.layers)
        wants = branch_lock.Wants(keys.branch_wants(repo, branch), branch_lock.lock_owner(),
                                  WANTS_SECONDS)
        lease_seconds = self.timings.lock_lease_seconds
        token = branch_lock.acquire(client, name, lease_seconds, wait_seconds=self.wait_seconds,
                                    excludes=excludes, wants=wants)
        if token is None:
            branch_lock.release(client, wants.key, wants.owner)
            raise BranchBusy(f"busy: an index run holds branch {repo}@{branch}; retry")
        try:
            with branch_lock.Heartbeat(client, name, token, lease_seconds=lease_seconds,
                                       every_seconds=self.timings.heartbeat_seconds,
                                       excludes=excludes):
                yield
        finally:
            branch_lock.release(client, name, token)


@contextmanager
def cli_run_held(settings: Settings, config: Config, repo_path: Path,
                 branch: str | None) -> Iterator[None]:
    """An index run of ``freshmark index`` holds its branch's lock while it runs when
    ``FRESHMARK_REDIS_URL`` names the deployment's Redis: a drop of the branch then waits for
    it (instead of deleting the collection it writes to), and so does a worker's run; it
    waits for theirs, ``BranchBusy`` (retry) after ``DROP_WAIT_SECONDS``."""
    if not settings.redis_url_set:
        yield
        return
    repo = GitRepo.open(repo_path)
    guard = BranchGuard(jobs.connect(settings.redis_url),
                        tuple(layer.name for layer in config.layers), jobspec.Timings.from_env(),
                        wait_seconds=DROP_WAIT_SECONDS)
    with guard.holding([(repo.key(), branch or repo.current_branch())]):
        yield

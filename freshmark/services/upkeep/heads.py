"""Which branch heads ``status`` and ``audit`` measure against, and how fresh they are.

For a configured (cluster) repository the heads are the remote's: its mirror is fetched first.
When the remote cannot be reached, the mirror's heads are used as they are and the answer says
when they were last fetched, so "0 commits behind" never hides a push whose webhook was lost.
A repository given by path is measured against its own branches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from freshmark.adapters.git.mirrors import RemoteUnavailable, last_fetched_seconds, sync_mirror
from freshmark.core.config import Config
from freshmark.core.errors import ConfigError
from freshmark.core.progress import duration
from freshmark.core.settings import Settings

REMOTE, MIRROR, LOCAL = "remote", "mirror", "local"


@dataclass(frozen=True)
class HeadSource:
    """Where the heads came from: ``kind`` is REMOTE (fetched now), MIRROR (the remote could
    not be reached: the last fetch, ``error`` says why) or LOCAL (a repository given by path).
    ``fetched_at_seconds`` is the Unix time of the fetch the heads come from (None for LOCAL,
    or a mirror never fetched)."""

    kind: str
    fetched_at_seconds: float | None = None
    error: str | None = None

    def describe(self, now_seconds: float) -> str:
        """``remote's, fetched just now`` or ``mirror's, fetched 2h05m ago (remote ...)``."""
        if self.kind == LOCAL:
            return "local branch"
        when = "never fetched"
        if self.fetched_at_seconds is not None:
            age = max(0.0, now_seconds - self.fetched_at_seconds)
            when = "fetched just now" if age < 1 else f"fetched {duration(age)} ago"
        if self.kind == REMOTE:
            return f"remote's, {when}"
        return f"mirror's, {when} (remote unreachable: {self.error})"

    def to_json(self) -> dict[str, object]:
        return {"head_source": self.kind, "head_fetched_at_seconds": self.fetched_at_seconds,
                "head_fetch_error": self.error}


def refresh_heads(settings: Settings, config: Config, repo_id: str | None) -> HeadSource:
    """Fetch a configured repository's mirror (the remote's heads); LOCAL for a path."""
    if repo_id is None:
        return HeadSource(LOCAL)
    try:
        sync_mirror(settings, config.repo(repo_id))
    except (RemoteUnavailable, ConfigError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return HeadSource(MIRROR, last_fetched_seconds(settings, repo_id), reason)
    return HeadSource(REMOTE, time.time())

"""One error hierarchy, split by cause.

``PermanentError`` means retrying cannot help (bad input, missing branch); ``RetryableError``
means the same call may succeed later (a store or broker that is down). Celery tasks retry only
the latter; the CLI prints either as one line and exits non-zero.
"""

from __future__ import annotations


class FreshmarkError(Exception):
    """Base of every error freshmark raises on purpose."""

    exit_code = 1


class PermanentError(FreshmarkError):
    """Retrying will not help: the input or the world must change first."""

    exit_code = 2


class RetryableError(FreshmarkError):
    """A transient failure (store, broker, network); the same call may succeed later."""

    exit_code = 3


class BranchBusy(RetryableError):
    """An index run holds the branch a drop or retirement must change; retry once it ends."""


class NotARepository(PermanentError):
    pass


class EmptyRepository(PermanentError):
    pass


class BranchNotFound(PermanentError):
    pass


class RepositoryGone(PermanentError):
    """A repository that was indexed has moved or been deleted since."""


class NotIndexed(PermanentError):
    """The branch has no collection yet."""


class BaseGone(NotIndexed):
    """A branch overlay's base is no longer indexed: the branch must be indexed again."""


class BaseInUse(PermanentError):
    """A branch collection that overlays are layered on cannot be dropped."""


class UnsafePath(PermanentError):
    """A path that tries to leave the repository (``..``, absolute, symlink outside)."""


class ConfigError(PermanentError):
    pass


class EmbedderMismatch(PermanentError):
    """A collection stamped with one embedder cannot take vectors from another."""


class StoreUnavailable(RetryableError):
    """The Chroma store could not be reached or written."""


class ServerUnavailable(RetryableError):
    """The freshmark server the CLI was pointed at (``FRESHMARK_SERVER_URL``) did not answer."""


class BrokerUnavailable(RetryableError):
    """Redis (job broker and cluster state) could not be reached."""


class StoreNotWritable(PermanentError):
    """The embedded store directory cannot be written."""


class BadInput(PermanentError):
    """A malformed request, query, snippet list or payload."""

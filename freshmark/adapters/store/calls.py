"""How freshmark calls Chroma: a lost server made retryable, requests cut to Chroma's limits."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from freshmark.core.errors import FreshmarkError, StoreUnavailable
from freshmark.core.redact import redact

# Chroma refuses larger writes (client.get_max_batch_size() reports 5,461 here).
MAX_BATCH = 5000
# Pages for reads, and how many paths go into one ``$in`` filter.
READ_PAGE = 2000
PATHS_PER_QUERY = 200

T = TypeVar("T")

# What the server client (``server_client.py``, the standard library's sockets) raises when a
# server cannot be reached; the embedded Chroma is a file on this host.
_CONNECTION_ERRORS = frozenset({
    "ConnectionError", "ConnectionRefusedError", "ConnectionResetError", "BrokenPipeError",
    "RemoteDisconnected", "TimeoutError", "gaierror", "UpstreamUnavailable",
})


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def is_connection_error(exc: BaseException) -> bool:
    """The server could not be reached (by the exception or any of its causes)."""
    names = {type(e).__name__ for e in _causes(exc)}
    text = str(exc).lower()
    return bool(names & _CONNECTION_ERRORS) or "could not connect" in text \
        or "connection refused" in text


def guard(what: str, fn: Callable[[], T]) -> T:
    """Run a Chroma call; a lost server becomes ``StoreUnavailable`` (retryable)."""
    try:
        return fn()
    except FreshmarkError:
        raise
    except Exception as exc:
        if is_connection_error(exc):
            raise StoreUnavailable(
                f"Chroma store unreachable while trying to {what}: {redact(str(exc))}"
            ) from exc
        raise


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def path_filters(paths: Sequence[str]) -> Iterator[dict[str, Any]]:
    """``where`` filters naming ``paths``, at most ``PATHS_PER_QUERY`` a filter."""
    for part in batches(paths, PATHS_PER_QUERY):
        yield {"path": {"$in": list(part)}} if len(part) > 1 else {"path": part[0]}

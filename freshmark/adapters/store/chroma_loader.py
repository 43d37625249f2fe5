"""Loading chromadb's client classes without the class-time checks of ``overrides``.

chromadb marks about 170 methods with ``overrides.override``. When a class is defined, that
decorator finds the base class by reading the caller's bytecode and compares the two
signatures through typing introspection. That costs about 0.1 to 0.15 s of CPU in every process
that imports chromadb and opens a client: the import and a first embedded client take 0.61 to
0.65 s with the checks, 0.48 to 0.53 s without. A 10-file incremental run in a new process
went from 1.09 to 0.95 s on average (``bench/RESULTS.md``).

The check guards chromadb's own development (an override whose signature drifted from its
base). A released chromadb has already passed it, and without it the classes are the same.

While ``load_chromadb`` imports chromadb and the API module a client needs (the client
would import it when built), ``override`` only marks the method (``__override__``, which
``EnforceOverrides`` reads), as its contract says. The original is put back afterwards, so any
other user of ``overrides`` keeps its checks. Clients are built after it, so no connection is
made while the decorator is swapped.

Written here because neither library has a switch for it. Nothing depends on it: if chromadb
stops using ``overrides``, loading is as slow as before and still correct.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

_NAMES = ("override", "overrides")
_lock = threading.Lock()
# What building the embedded client imports on first use (chromadb 1.x). A server's client is
# freshmark's own (``server_client.py``): it imports no chromadb.
EMBEDDED_CLIENT_MODULES = ("chromadb.api.rust", "chromadb.telemetry.product.posthog")


def _overrides_module() -> ModuleType | None:
    try:
        return importlib.import_module("overrides")
    except ImportError:  # a chromadb that no longer brings it: nothing to skip
        return None


def _marking_override(method: Any = None, **_checks: Any) -> Any:
    """``overrides.override`` without its checks: the method, marked as an override."""
    if method is None:  # used as @override(check_signature=...)
        return _marking_override
    method.__override__ = True
    return method


def load_chromadb(*client_modules: str) -> None:
    """Import chromadb and ``client_modules`` (``EMBEDDED_CLIENT_MODULES``) without the
    checks; a module already imported costs nothing."""
    with _unchecked_overrides():
        for name in ("chromadb", *client_modules):
            try:
                importlib.import_module(name)
            except ImportError:  # another chromadb layout: the client imports what it needs
                continue


@contextmanager
def _unchecked_overrides() -> Iterator[None]:
    module = _overrides_module()
    with _lock:
        saved: dict[str, Callable[..., Any]] = {
            name: getattr(module, name) for name in _NAMES if hasattr(module, name)}
        for name in saved:
            setattr(module, name, _marking_override)
        try:
            yield
        finally:
            for name, original in saved.items():
                setattr(module, name, original)

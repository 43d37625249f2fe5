"""Loading chromadb's client classes without the class-time checks of ``overrides``.

chromadb marks about 170 methods with ``overrides.override``. When a class is defined, that
decorator finds the base class by reading the caller's bytecode and compares the two
signatures through typing introspection. That costs about 0.15 s of CPU in every process that
imports chromadb and opens a client: the import falls from 0.55 to 0.46 s and a first
``PersistentClient`` from 0.14 to 0.04 s (``bench/RESULTS.md``). That is 15 % of a 10-file
incremental run in a new process.

The check guards chromadb's own development (an override whose signature drifted from its
base). A released chromadb has already passed it, and without it the classes are the same.

While chromadb's modules load (``loading_chromadb``), ``override`` only marks the method
(``__override__``, which ``EnforceOverrides`` reads), as its contract says. The original is
put back afterwards, so any other user of ``overrides`` keeps its checks.

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


@contextmanager
def loading_chromadb() -> Iterator[None]:
    """Import chromadb's modules (and build its first client) inside this block."""
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

"""Module paths (pure): the path parts an import spec names, and the module path of a file.

Shared by the symbol graph (imports resolved to indexed files) and dependency drift (imports
matched against the paths a diff changed), so both read ``orders.domain.order``,
``./util``, ``..pkg.mod`` and ``crate::a::b`` the same way.
"""

from __future__ import annotations

import posixpath
import re

_SEPARATORS = re.compile(r"::|[./\\]")


def stem(path: str) -> str:
    """``src/orders/order.py`` -> ``src/orders/order`` (a path without its extension)."""
    return path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path


def import_parts(from_path: str, spec: str) -> list[str]:
    """The path parts ``spec``, imported from ``from_path``, names: ``./util`` and
    ``..pkg.mod`` resolved against the importing file, dotted and ``::`` names split."""
    here = posixpath.dirname(from_path)
    if spec.startswith(("./", "../")):
        joined = posixpath.normpath(posixpath.join(here, spec))
        return [p for p in joined.split("/") if p not in ("", ".", "..")]
    if spec.startswith("."):  # Python relative: ".models", "..pkg.mod"
        dots = len(spec) - len(spec.lstrip("."))
        base = here
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        rest = [p for p in spec[dots:].split(".") if p]
        return [p for p in base.split("/") if p] + rest
    return [p for p in _SEPARATORS.split(spec) if p and p not in ("crate", "self", "super")]

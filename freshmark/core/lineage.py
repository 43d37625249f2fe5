"""A class's lineage: the class and the classes it extends, nearest first (pure).

The context graph judges a call by the class of the value it is made on and that class's
bases (``call_standing`` for Python, ``php_calls`` for PHP). Each language reads a class's
bases from its own signature; the walk over them is this one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

MAX_BASES = 16  # a lineage longer is a cycle of names, not a class's


def lineage(start: str, bases_of: Callable[[str], Iterable[str]]) -> list[str]:
    """``start`` and the classes ``bases_of`` reaches from it, breadth first (a class's
    bases before theirs), each once, at most ``MAX_BASES``."""
    found: list[str] = []
    queue = [start]
    while queue and len(found) < MAX_BASES:
        current = queue.pop(0)
        found.append(current)
        queue += [base for base in bases_of(current) if base not in found and base not in queue]
    return found

"""The Redis Lua scripts of the queue adapter, read by name from the ``lua`` folder beside it.

Each script is one ``lua/<name>.lua`` file whose first comment line says what KEYS and ARGV it
takes; they ship as package data, so ``importlib.resources`` finds them in any install. A file
is read once and its text cached: callers load their scripts at import time.

The fan-out scripts share their helpers (``now``, ``current``, ``touch``, ``held_by``,
``lease``) through one ``fanout_prelude.lua`` that ``lua(name, prelude=...)`` puts in front,
rather than a copy inlined into each script: the helpers stay defined in one place and the
scripts stay short, as they were when the prelude was a Python string. Line numbers in a Redis
error for such a script count from the top of the prelude.
"""

from __future__ import annotations

import functools
from importlib import resources


@functools.cache
def _read(name: str) -> str:
    return resources.files(__package__).joinpath("lua", f"{name}.lua").read_text("utf-8")


def lua(name: str, *, prelude: str = "") -> str:
    """The text of script ``name``, with script ``prelude`` in front of it when one is named."""
    if not prelude:
        return _read(name)
    head = _read(prelude)
    # A prelude file missing its last newline would glue its last line to the script's first.
    return head + ("" if head.endswith("\n") else "\n") + _read(name)

"""Path globs: the one translator from a glob to a regular expression."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache


@lru_cache(maxsize=4096)
def _glob_regex(glob: str) -> re.Pattern[str]:
    """Translate a path glob: ``**`` spans directories, ``*`` and ``?`` stay within one."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def glob_match(path: str, glob: str) -> bool:
    """True if a repo-relative POSIX path matches a glob (``**`` crosses directories)."""
    if "/" not in glob and "**" not in glob:
        # A bare pattern like "*.bak" matches the file name at any depth.
        return fnmatchcase(path.rsplit("/", 1)[-1], glob)
    return bool(_glob_regex(glob).match(path))

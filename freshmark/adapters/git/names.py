"""Branch names freshmark accepts: git's own rules (libgit2's check), bounded in length."""

from __future__ import annotations

import pygit2

MAX_BRANCH_NAME_CHARS = 200


def is_valid_branch_name(name: str) -> bool:
    """git's own rules (no ``..``, no control characters, ``:``, ``~``...) plus a length cap and
    no leading ``-`` (it would read as an option to git tools)."""
    if not name or len(name) > MAX_BRANCH_NAME_CHARS or name.startswith("-"):
        return False
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return False
    try:
        return bool(pygit2.reference_is_valid_name(f"refs/heads/{name}"))
    except (ValueError, TypeError):
        return False

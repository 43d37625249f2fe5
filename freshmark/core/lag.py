"""An index behind its branch head, in words: what a search or a context slice says it cannot
hold yet (``services.retrieval.search.unindexed_summary`` works the figures out)."""

from __future__ import annotations

from typing import Any


def lag_phrase(unindexed: dict[str, Any]) -> str:
    """``unindexed_summary`` in words, naming only what there is: ``not indexed yet: 2
    commits; 1 new file not searched (shop/logger.py); 1 changed file verified as it is now``."""
    commits, new = unindexed["commits"], unindexed["new_files"]
    changed, deleted = unindexed["changed_files"], unindexed.get("deleted_files", 0)
    parts = [f"not indexed yet: {commits} commit{'' if commits == 1 else 's'}"]
    if new:
        more = ", ..." if new > len(unindexed["new_paths"]) else ""
        parts.append(f"{new} new file{'' if new == 1 else 's'} not searched "
                     f"({', '.join(unindexed['new_paths'])}{more})")
    moved = unindexed.get("moved_files", 0)
    if moved:
        parts.append(f"{moved} moved file{'' if moved == 1 else 's'} verified at "
                     f"{'its new path' if moved == 1 else 'their new paths'}")
    if changed or deleted:
        what = " and ".join(f"{count} {kind}" for count, kind in
                            ((changed, "changed"), (deleted, "deleted")) if count)
        one = changed + deleted == 1
        parts.append(f"{what} file{'' if one else 's'} verified as "
                     f"{'it is' if one else 'they are'} now")
    return "; ".join(parts)

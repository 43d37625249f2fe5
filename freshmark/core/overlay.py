"""What an overlay is layered on, and the pure planning of an overlay run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.core.manifest import Manifest
from freshmark.core.tree import FileChange

# A chain deeper than this layers a new branch on the chain's root base instead: reads cost a
# query per layer, and layering on any indexed branch is correct (the diff is by content).
MAX_CHAIN_DEPTH = 3


@dataclass(frozen=True)
class OverlayBase:
    """What an overlay is layered on, as its manifest records it (``Manifest.overlay``)."""

    repo_key: str
    branch: str
    collection: str
    layered_on: dict[str, str]  # layer -> the base's indexed commit the overlay diffs against
    forked_from: str | None = None  # merge base of the branch head and the base commit

    def to_dict(self) -> dict[str, Any]:
        return {"repo_key": self.repo_key, "branch": self.branch, "collection": self.collection,
                "layered_on": dict(self.layered_on), "forked_from": self.forked_from}

    def moved(self, layer: str, base: Manifest) -> bool:
        """The base was indexed at another commit than the one this overlay is layered on."""
        now = base_commit_of(base, layer)
        return now is not None and self.layered_on.get(layer) != now

    @classmethod
    def of(cls, manifest: Manifest) -> OverlayBase | None:
        raw = manifest.overlay
        if not raw:
            return None
        return cls(str(raw["repo_key"]), str(raw["branch"]), str(raw.get("collection", "")),
                   {str(k): str(v) for k, v in (raw.get("layered_on") or {}).items()},
                   raw.get("forked_from"))


def base_commit_of(base: Manifest, layer: str) -> str | None:
    """The commit a base's ``layer`` is indexed at (its manifest commit if the layer was never
    stamped on its own): what an overlay of that layer is diffed against."""
    return base.layer_commit(layer) or base.commit


# -- planning (pure) ----------------------------------------------------------------------------
@dataclass(frozen=True)
class OverlayPlan:
    """One layer's overlay work: the changes to (re)plan into the overlay, and the paths whose
    overlay records go because the branch has the base's content there again."""

    changes: list[FileChange]
    purge_paths: list[str]


def plan_overlay(
    to_base: Sequence[FileChange],
    held_paths: Iterable[str],
    changed_on_branch: set[str] | None,
    present_at_head: set[str],
) -> OverlayPlan:
    """Bring an overlay to ``diff(base, head)`` (``to_base``, in the base -> head direction).

    ``held_paths``: paths the overlay holds now. ``changed_on_branch``: paths changed since the
    overlay's last run (``diff(previous head, head)``), or None when that is unknown (first run,
    rewritten history): then every path of the diff is planned, which re-embeds nothing that is
    unchanged. ``present_at_head``: paths among ``held_paths`` that exist at the head.

    - a differing path the overlay does not hold yet, or one changed on the branch: planned;
    - a held path that differs and did not change: already right, left alone;
    - a held path that no longer differs: its overlay records go (the base serves it), except
      where the file is absent on both sides: that is the branch's own history (a file it added
      and deleted), tombstoned if it just went, and kept so ``--history`` still shows it.
    """
    held = set(held_paths)
    differing: set[str] = set()
    changes: list[FileChange] = []
    for change in to_base:
        paths = {p for p in (change.old_path, change.new_path) if p}
        differing |= paths
        fresh = not paths <= held
        if fresh or changed_on_branch is None or paths & changed_on_branch:
            changes.append(change)
    same_as_base = held - differing
    for path in sorted(same_as_base - present_at_head):
        if changed_on_branch is None or path in changed_on_branch:
            changes.append(FileChange("deleted", path, None, None, None))
    purge = sorted(same_as_base & present_at_head)
    return OverlayPlan(changes, purge)

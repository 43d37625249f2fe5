"""The manifest: the stamp of record of a branch collection, and the collection's name."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from freshmark.core.stamp import sha256_hex

SCHEMA_VERSION = 1

COLLECTION_PREFIX = "fm"


def collection_name(repo_key: str, branch: str) -> str:
    """A Chroma-safe, collision-free name for any branch name (``feature/x``, unicode, 200 chars).

    The readable slug is for humans only; the digest of the exact (repo_key, branch) pair is
    what makes names unique.
    """
    digest = sha256_hex(f"{repo_key}\0{branch}")[:24]
    repo_name = re.split(r"[/:]", repo_key.rstrip("/"))[-1].removesuffix(".git")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{repo_name}-{branch}").strip("-")[:48].strip("-")
    return f"{COLLECTION_PREFIX}-{slug}-{digest}" if slug else f"{COLLECTION_PREFIX}-{digest}"


MAX_REWINDS = 32


@dataclass
class Manifest:
    """What a branch collection holds: the stamp of record for (repo, branch)."""

    repo: str
    repo_key: str
    branch: str
    embedder: str
    collection: str
    repo_path: str = ""
    commit: str | None = None
    indexed_at: str | None = None
    # layer name -> {"commit": sha, "indexed_at": iso, "chunking": CHUNKING_VERSION}
    layers: dict[str, dict[str, str]] = field(default_factory=dict)
    base_branch: str | None = None
    # An overlay's base (``overlay.OverlayBase``): None for a collection that holds everything.
    overlay: dict[str, Any] | None = None
    generation: int = 0
    # Records were deleted (not tombstoned) at this generation: followers rebuild from scratch.
    purged_generation: int = 0
    # Generations a layer's run published after another layer's run had published the one it
    # wrote at, as [published, written] pairs, newest last (``MAX_REWINDS`` kept; the newest
    # dropped one's published generation in ``rewinds_dropped_at``): see ``rewound_held``.
    rewinds: list[list[int]] = field(default_factory=list)
    rewinds_dropped_at: int = 0
    schema_version: int = SCHEMA_VERSION
    created_at: str | None = None
    # The chunks the branch shows at its last run, {"live": n, "tombstoned": m}, so ``status``
    # reads them instead of listing ids; None until a run has counted them.
    chunk_counts: dict[str, int] | None = None
    last_used_at: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def rewind(self, published: int, written: int) -> None:
        """Record that generation ``published`` holds records written at ``written``, which
        another run had published meanwhile."""
        self.rewinds.append([published, written])
        while len(self.rewinds) > MAX_REWINDS:
            self.rewinds_dropped_at = max(self.rewinds_dropped_at, self.rewinds.pop(0)[0])

    def rewound_held(self, held: int) -> int:
        """The generation a follower that holds ``held`` must fetch records above: lower than
        ``held`` when a later publication holds records written at or below it (runs of two
        layers overlapped; a follower caught up in between never saw them), -1 (rebuild) when
        the rewinds it would need are no longer kept."""
        if held < 0 or held >= self.generation:
            return held
        if held < self.rewinds_dropped_at:
            return -1
        return min([held, *(written - 1 for published, written in self.rewinds
                             if written <= held < published)])

    def layer_commit(self, layer: str) -> str | None:
        stamp = self.layers.get(layer)
        return stamp.get("commit") if stamp else None

    def layer_chunking(self, layer: str) -> str | None:
        """The chunking version the layer was indexed under (None: before versions were
        kept)."""
        stamp = self.layers.get(layer)
        return stamp.get("chunking") if stamp else None

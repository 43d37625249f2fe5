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
    # layer name -> {"commit": sha, "indexed_at": iso}
    layers: dict[str, dict[str, str]] = field(default_factory=dict)
    base_branch: str | None = None
    # An overlay's base (``overlay.OverlayBase``): None for a collection that holds everything.
    overlay: dict[str, Any] | None = None
    generation: int = 0
    # Records were deleted (not tombstoned) at this generation: followers rebuild from scratch.
    purged_generation: int = 0
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

    def layer_commit(self, layer: str) -> str | None:
        stamp = self.layers.get(layer)
        return stamp.get("commit") if stamp else None

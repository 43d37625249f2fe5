"""The model weights' sha256 is remembered per (path, size, mtime), not re-hashed per process."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from freshmark.adapters.embedding.minilm import cached_weights_sha256, weights_identity_key


def _weights(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    return path


def test_unchanged_weights_identity_is_read_from_the_cache_not_hashed(tmp_path: Path) -> None:
    weights, cache_dir = _weights(tmp_path, b"weights v1"), tmp_path / "cache"
    assert cached_weights_sha256(weights, cache_dir) == hashlib.sha256(b"weights v1").hexdigest()
    # A marker in the record proves the next call (as a new process would) reads, not hashes.
    record = cache_dir / "models" / "weights-sha256.json"
    key = weights_identity_key(weights, weights.stat())
    record.write_text(json.dumps({key: "marker"}), encoding="utf-8")
    assert cached_weights_sha256(weights, cache_dir) == "marker"


def test_replaced_weights_are_hashed_again(tmp_path: Path) -> None:
    weights, cache_dir = _weights(tmp_path, b"weights v1"), tmp_path / "cache"
    cached_weights_sha256(weights, cache_dir)
    weights.write_bytes(b"weights v2, longer")
    os.utime(weights, ns=(1, 1))  # a different mtime as well as size
    assert cached_weights_sha256(weights, cache_dir) == hashlib.sha256(
        b"weights v2, longer").hexdigest()

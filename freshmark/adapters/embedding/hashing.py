"""A token-hashing embedder: fast and deterministic, but NOT semantic (fast test tier only)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from freshmark.core.errors import BadInput

_WORD = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Stands in for a text with no tokens, so every row can still be unit length.
_EMPTY_TOKEN = "\x00empty"


def hashing_features(text: str) -> Counter[str]:
    """Lower-cased tokens, plus the parts of snake_case and camelCase identifiers."""
    features: Counter[str] = Counter()
    for word in _WORD.findall(text):
        features[word.lower()] += 1
        parts = [part for piece in word.split("_") for part in _CAMEL_PART.findall(piece)]
        if len(parts) > 1:
            features.update(part.lower() for part in parts)
    return features or Counter({_EMPTY_TOKEN: 1})


def _bucket_and_sign(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): the same text must map to the same vector in every process.
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    number = int.from_bytes(digest, "little")
    return number % dim, 1.0 if (number >> 63) & 1 else -1.0


class HashingEmbedder:
    """Signed feature hashing of code-aware tokens into ``dim`` buckets, L2-normalised.

    For the fast test tier only: texts that share tokens land close together, but synonyms and
    paraphrases do not, so it says nothing about retrieval quality. Deterministic across
    processes and machines; float32 ``[n, dim]`` unit rows.
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.id = f"hashing-v1/{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text, in the order given."""
        if isinstance(texts, str):
            raise BadInput("embed() takes a sequence of texts, not a single string")
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise BadInput("embed() takes only str texts")
            for feature, count in hashing_features(text).items():
                bucket, sign = _bucket_and_sign(feature, self.dim)
                # sublinear term frequency, so one repeated token does not swamp the rest
                vectors[row, bucket] += sign * (1.0 + np.log(count))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # Colliding signs can cancel to an all-zero row; give it a fixed unit direction.
        zero_rows = norms[:, 0] == 0.0
        vectors[zero_rows, 0] = 1.0
        norms[zero_rows] = 1.0
        return vectors / norms

    def embed_query(self, text: str) -> np.ndarray:
        """One text's unit-length float32 vector, shape ``[dim]``."""
        return self.embed([text])[0]

"""Text embedders and the content-addressed embedding cache.

``get_embedder(name, cache_dir)`` is the one way to obtain an embedder. Every embedder has a
stable ``id`` (model and variant) that is stamped on the collections it fills: two different ids
never share a collection, and the cache keys vectors by it.

Names:
- ``minilm``: the default, real semantic model (all-MiniLM-L6-v2 on onnxruntime, int8 variant);
- ``minilm-int8`` / ``minilm-fp32``: the explicit variants (fp32 reproduces sentence-transformers
  to float precision; int8 is the faster one, see ``bench/bench_embedding.py``);
- ``minilm-pool``: int8, reading a text longer than the model's 256 tokens whole (its windows
  embedded and averaged) instead of its first 256 tokens;
- ``hashing``: fast, deterministic and NOT semantic, for the fast test tier only.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from freshmark.adapters.embedding.cache import EmbeddingCache, embed_with_cache, text_sha256
from freshmark.adapters.embedding.hashing import HashingEmbedder
from freshmark.core.errors import ConfigError
from freshmark.core.ports import Embedder

DEFAULT_MINILM_VARIANT = "int8"
MINILM_MODEL_NAME = "all-MiniLM-L6-v2"  # minilm.MODEL_NAME, here so ids need no onnxruntime
HASHING_DIM = 384
# name -> MiniLM variant; None marks the hashing embedder.
_EMBEDDER_NAMES: dict[str, str | None] = {
    "minilm": DEFAULT_MINILM_VARIANT,
    "minilm-int8": "int8",
    "minilm-fp32": "fp32",
    "minilm-pool": DEFAULT_MINILM_VARIANT,
    "hashing": None,
}
# Names whose MiniLM reads a long text whole (windows pooled) instead of its first 256 tokens.
_POOLED_NAMES = frozenset({"minilm-pool"})
KNOWN_EMBEDDERS = tuple(_EMBEDDER_NAMES)


def _variant(name: str) -> str | None:
    """The MiniLM variant of the embedder called ``name`` (None: hashing); ConfigError for a
    name no embedder has."""
    if name not in _EMBEDDER_NAMES:
        raise ConfigError(f"unknown embedder {name!r}; known: {', '.join(KNOWN_EMBEDDERS)}")
    return _EMBEDDER_NAMES[name]


def _minilm() -> ModuleType:
    """The MiniLM module, imported when a model is needed: it imports onnxruntime and
    tokenizers (~30 ms), which a no-op run, a BM25-only search, ``status`` or the hashing tier
    never use."""
    return importlib.import_module("freshmark.adapters.embedding.minilm")


def embedder_id(name: str) -> str:
    """The ``id`` the embedder called ``name`` stamps, known without loading it."""
    variant = _variant(name)
    if variant is None:
        return f"hashing-v1/{HASHING_DIM}"
    return f"{MINILM_MODEL_NAME}/onnx-{variant}" + ("+pool" if name in _POOLED_NAMES else "")


class LazyEmbedder:
    """``get_embedder(name, ...)`` loaded at the first embed, not before.

    A no-op index run or a BM25-only search needs only the ``id`` (to check the index was built
    with this model); loading MiniLM costs onnxruntime's import and a graph load.
    """

    dim = 384  # every known embedder's vector length (MiniLM's, and the hashing default)

    def __init__(self, name: str, cache_dir: Path, threads: int | None = None) -> None:
        self.id = embedder_id(name)
        self._args = (name, Path(cache_dir), threads)
        self._loaded: Embedder | None = None

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def _embedder(self) -> Embedder:
        if self._loaded is None:
            name, cache_dir, threads = self._args
            self._loaded = get_embedder(name, cache_dir, threads=threads)
        return self._loaded

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embedder().embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embedder().embed_query(text)


def get_embedder(name: str, cache_dir: Path, threads: int | None = None) -> Embedder:
    """The embedder called ``name``; MiniLM graphs are built once and cached under ``cache_dir``.

    ``threads`` caps onnxruntime's intra-op threads (default: the CPUs this process may use).
    Raises ConfigError for an unknown name or when the model package is not installed.
    """
    variant = _variant(name)
    if variant is None:
        return HashingEmbedder()
    return _minilm().load_minilm(variant, Path(cache_dir), threads=threads,
                                 long_text="pool" if name in _POOLED_NAMES else "head")


def model_build_pending(name: str, cache_dir: Path) -> bool:
    """Whether the embedder called ``name`` has a model graph not yet built under ``cache_dir``
    (checked without building or loading it)."""
    variant = _variant(name)
    if variant is None:
        return False
    minilm = _minilm()
    return not minilm.cached_model_file(minilm.locate_model_files(), Path(cache_dir),
                                        variant).is_file()


def prepare_embedder(name: str, cache_dir: Path) -> None:
    """Build the model graph of the embedder called ``name`` under ``cache_dir`` unless a
    process already has; nothing for an embedder without one (hashing).

    A worker calls it before it takes jobs: on a new host or pod the build costs ~4 s of CPU,
    which its first job would otherwise pay while every other process waits on the build's
    lock.
    """
    variant = _variant(name)
    if variant is not None:
        minilm = _minilm()
        minilm.ensure_model_file(minilm.locate_model_files(), Path(cache_dir), variant)


__all__ = [
    "DEFAULT_MINILM_VARIANT",
    "KNOWN_EMBEDDERS",
    "LazyEmbedder",
    "Embedder",
    "EmbeddingCache",
    "embed_with_cache",
    "embedder_id",
    "get_embedder",
    "model_build_pending",
    "prepare_embedder",
    "text_sha256",
]

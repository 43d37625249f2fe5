"""The seams between floors: what services need of the outside systems."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``id`` names model and variant (e.g. ``all-MiniLM-L6-v2/onnx-int8``); ``dim`` is the vector
    length. ``embed`` returns ``[n, dim]`` rows in input order (``(0, dim)`` for no texts);
    ``embed_query`` returns one ``[dim]`` vector.
    """

    id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class QueryEmbedder(Protocol):
    def embed_query(self, text: str) -> np.ndarray: ...

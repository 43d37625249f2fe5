"""The one factory of the lexical engine every site uses (``ports.LexicalEngine``).

``settings.lexical`` names it (``FRESHMARK_LEXICAL``, one of ``core.settings.LEXICAL_ENGINES``):
tantivy, BM25 top-k over on-disk indexes under ``FRESHMARK_HOME/cache/tantivy`` shared by every
process of a host. A second engine is built here beside it. Design and limits:
docs/lexical-index.md.
"""

from __future__ import annotations

from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
from freshmark.core.ports import LexicalEngine
from freshmark.core.settings import Settings


def lexical_engine(settings: Settings) -> LexicalEngine:
    """The lexical engine ``settings.lexical`` names, over ``settings.cache_dir``."""
    return TantivyEngine(settings.cache_dir)

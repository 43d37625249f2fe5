"""The lexical engine: BM25 per collection on tantivy, layered for overlays, on disk."""

"""The lexical engine: BM25 per collection, layered for overlays, snapshotted on disk."""

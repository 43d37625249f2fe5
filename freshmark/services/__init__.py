"""Use cases: indexing, retrieval, verification, context slices and upkeep."""

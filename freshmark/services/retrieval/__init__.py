"""Retrieval: hybrid search, verified and cited."""

"""Indexing: bring a branch collection to the branch head."""

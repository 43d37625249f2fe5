"""The pure core: stamps, kinds, verdicts, plans, queries, fusion, chunking (no I/O)."""

"""Adapters: one outside system each (git, Chroma, lexical engine, embedder, Redis, metrics)."""

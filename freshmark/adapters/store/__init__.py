"""The Chroma store: branch collections, and overlays read together with their base."""

"""chromadb loaded without the class-time checks of ``overrides``: it works, and the checks
come back for everyone else once it is loaded. In a new process, where chromadb is not loaded
yet (this test process may have loaded it already)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROBE = textwrap.dedent("""
    import sys
    import overrides
    from freshmark.adapters.store.chroma_loader import EMBEDDED_CLIENT_MODULES, load_chromadb

    assert "chromadb" not in sys.modules
    load_chromadb(*EMBEDDED_CLIENT_MODULES)
    import chromadb
    client = chromadb.PersistentClient(path=sys.argv[1])
    # chromadb's own classes are marked as the decorator's contract says
    from chromadb.api.rust import RustBindingsAPI
    assert RustBindingsAPI.heartbeat.__override__ is True
    collection = client.create_collection("probe", embedding_function=None)
    collection.add(ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]])
    hit = collection.query(query_embeddings=[[0.9, 0.1]], n_results=1)
    assert hit["ids"] == [["a"]], hit

    class Base:
        def run(self, x: int) -> int:
            return x

    try:  # the checking decorator is back: a drifted signature is refused again
        class Child(Base):
            @overrides.override
            def run(self, x: str, y: str) -> str:
                return x
    except TypeError:
        print("checked")
""")


def test_chromadb_loads_and_works_and_overrides_checks_again_afterwards(tmp_path: Path):
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "chroma")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checked"

"""File kinds are stored in the lexical index by fixed codes: one per kind, kept on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_lexical_layers import FakeCollection, record

from freshmark.adapters.lexical import tantivy_store
from freshmark.adapters.lexical.tantivy_engine import (
    TantivyChannel,
    TantivyEngine,
    index_directory,
)
from freshmark.adapters.lexical.tantivy_store import TantivyCollection
from freshmark.core.kinds import FILE_KINDS, KIND_CODES


def test_every_file_kind_has_its_own_code() -> None:
    assert set(KIND_CODES) == set(FILE_KINDS)
    assert len(set(KIND_CODES.values())) == len(KIND_CODES)


def test_kinds_survive_in_the_index_on_disk(tmp_path: Path) -> None:
    collection = FakeCollection("c", [record("s", "src/mod0.py", "def restock(): pass"),
                                      record("t", "tests/test_orders.py", "def restock(): 1")])
    TantivyEngine(tmp_path).after_run(collection, True)  # type: ignore[arg-type]
    reopened = TantivyCollection("c", index_directory(tmp_path, "c"))  # as a new process
    assert reopened.refresh(collection) == 0  # type: ignore[arg-type]  # nothing fetched
    hits, _ = TantivyChannel([(reopened, frozenset())], None).search(["restock"], 5,
                                                                      kinds=["test"])
    assert [h.id for h in hits] == ["t"]


def test_an_index_written_under_another_code_table_is_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collection = FakeCollection("c", [record("t", "tests/test_orders.py", "def restock(): 1")])
    renumbered = {**KIND_CODES, "test": KIND_CODES["source"], "source": KIND_CODES["test"]}
    monkeypatch.setattr(tantivy_store, "_KIND_TABLE", json.dumps(renumbered))
    TantivyEngine(tmp_path).after_run(collection, True)  # type: ignore[arg-type]
    monkeypatch.undo()
    reopened = TantivyCollection("c", index_directory(tmp_path, "c"))
    assert reopened.refresh(collection) == 1  # type: ignore[arg-type]  # fetched again

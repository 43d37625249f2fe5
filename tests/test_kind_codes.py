"""File kinds are stored in lexical snapshots by fixed codes, and a snapshot records its table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from freshmark.adapters.lexical import index as lexical_index
from freshmark.adapters.lexical.index import LexicalIndex
from freshmark.core.kinds import FILE_KINDS, KIND_CODES
from freshmark.core.stamp import ChunkRecord


def _record(doc_id: str, file_kind: str) -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=f"src/{doc_id}.py",
                       symbol="f", start_line=1, end_line=3, indexed_at="2026-01-01T00:00:00Z",
                       blob_sha="b" * 40, content_sha256="d" * 64, id=doc_id,
                       text="def restock(): pass", file_kind=file_kind)


def test_every_file_kind_has_its_own_code() -> None:
    assert set(KIND_CODES) == set(FILE_KINDS)
    assert len(set(KIND_CODES.values())) == len(KIND_CODES)


def test_codes_fit_the_one_byte_a_snapshot_stores() -> None:
    assert all(0 <= code <= 255 for code in KIND_CODES.values())


def test_a_snapshot_records_its_code_table(tmp_path: Path) -> None:
    LexicalIndex("c", identity="x").save(tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz") as data:
        header = json.loads(data["header"].tobytes().decode())
    assert header["kind_codes"] == KIND_CODES


def test_a_snapshot_of_another_code_table_is_not_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lexical = LexicalIndex("c", identity="x")
    lexical.apply([_record("t", "test")])
    renumbered = {**KIND_CODES, "test": KIND_CODES["source"], "source": KIND_CODES["test"]}
    monkeypatch.setattr(lexical_index, "KIND_CODES", renumbered)
    lexical.save(tmp_path / "c.npz")
    monkeypatch.undo()
    assert LexicalIndex.load(tmp_path / "c.npz", "c", "x") is None


def test_kinds_survive_a_snapshot_round_trip(tmp_path: Path) -> None:
    lexical = LexicalIndex("c", identity="x")
    lexical.apply([_record("s", "source"), _record("t", "test")])
    lexical.save(tmp_path / "c.npz")
    loaded = LexicalIndex.load(tmp_path / "c.npz", "c", "x")
    assert loaded is not None
    hits, _ = loaded.search(["restock"], 5, kinds=["test"])
    assert [h.id for h in hits] == ["t"]

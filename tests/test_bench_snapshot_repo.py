"""A repository too large to mirror is measured from a release's source archive: the archive
becomes one reproducible commit, and only reports whose fixed files it holds are kept."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import snapshot_repo as snap  # noqa: E402


def _archive(tmp_path: Path, files: dict[str, str]) -> Path:
    archive = tmp_path / "pkg-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"pkg-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


FILES = {"pkg/core.py": "def f():\n    return 1\n", "PKG-INFO": "Metadata-Version: 2.1\n",
         "pkg.egg-info/SOURCES.txt": "pkg/core.py\n"}


def _report(number: int, gold: list[str]) -> dict:
    return {"instance_id": f"owner__pkg-{number}", "repo": "owner/pkg", "base_commit": "0" * 40,
            "gold_files": gold, "problem_statement": "f returns 1"}


def test_the_same_archive_gives_the_same_commit_without_packaging_metadata(
        tmp_path: Path) -> None:
    tree = snap.unpack(_archive(tmp_path, FILES), tmp_path / "unpacked")
    first = snap.commit_tree(tree, tmp_path / "a")
    second = snap.commit_tree(tree, tmp_path / "b")
    assert first == second
    assert snap.in_tree(tmp_path / "a", "pkg/core.py")
    assert not snap.in_tree(tmp_path / "a", "PKG-INFO")
    assert not snap.in_tree(tmp_path / "a", "pkg.egg-info/SOURCES.txt")


def test_an_archive_without_one_top_level_directory_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "flat.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("a.py", "b.py"):
            info = tarfile.TarInfo(name)
            tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(SystemExit, match="one top-level directory"):
        snap.unpack(archive, tmp_path / "unpacked")


def test_reports_are_chosen_by_number_and_kept_only_when_the_tree_holds_their_files(
        tmp_path: Path) -> None:
    tree = snap.unpack(_archive(tmp_path, FILES), tmp_path / "unpacked")
    mirror = tmp_path / "mirror"
    commit = snap.commit_tree(tree, mirror)
    rows = [_report(10, ["pkg/core.py"]), _report(11, ["pkg/added_later.py"]),
            _report(99, ["pkg/core.py"]), {**_report(12, ["pkg/core.py"]), "repo": "other/x"}]
    out = tmp_path / "reports.jsonl"
    assert snap.write_reports(snap.chosen(rows, "owner/pkg", (10, 20)), mirror, commit, out) == \
        (1, 1)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["instance_id"], r["base_commit"]) for r in written] == \
        [("owner__pkg-10", commit)]

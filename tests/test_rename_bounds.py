"""Rename similarity reads no blob over the size limit: an edited, moved big file is a delete
and an add (by blob id), while small files keep their exact renames. A blob missing from a
damaged or partial clone skips similarity for that diff, with a warning that says so; its
unedited moves are still renames (paired by blob id, which reads no blob)."""

from __future__ import annotations

from pathlib import Path

from repo_builder import RepoBuilder, git

from freshmark.adapters.git.repo import GitRepo

LIMIT_BYTES = 1024 * 1024


def _moved_with_one_byte_edit(tmp_path: Path) -> tuple[GitRepo, str, str]:
    repo = RepoBuilder.init(tmp_path / "big")
    repo.write("data/big.txt", "x = 1\n" * 400_000)  # 2.4 MB
    repo.write("src/small.py", "def small():\n    return 1\n")
    old = repo.commit("big file")
    git(repo.path, "mv", "data/big.txt", "data/moved.txt")
    git(repo.path, "mv", "src/small.py", "src/kept.py")
    repo.write("data/moved.txt", "x = 2\n" + "x = 1\n" * 399_999)
    return GitRepo.open(repo.path), old, repo.commit("moved and edited")


def test_an_edited_move_of_a_blob_over_the_limit_is_a_delete_and_an_add(tmp_path: Path) -> None:
    repo, old, new = _moved_with_one_byte_edit(tmp_path)
    repo.similarity_max_bytes = LIMIT_BYTES
    changes = {(c.status, c.old_path, c.new_path) for c in repo.diff(old, new)}
    assert changes == {("deleted", "data/big.txt", None), ("added", None, "data/moved.txt"),
                       ("renamed", "src/small.py", "src/kept.py")}


def test_without_a_limit_the_same_move_is_a_rename(tmp_path: Path) -> None:
    repo, old, new = _moved_with_one_byte_edit(tmp_path)
    repo.similarity_max_bytes = 0
    assert ("renamed", "data/big.txt", "data/moved.txt") in {
        (c.status, c.old_path, c.new_path) for c in repo.diff(old, new)}


def test_a_blob_missing_from_the_clone_makes_a_rename_a_delete_and_an_add_and_says_why(
        tmp_path: Path, caplog) -> None:
    repo, old, new = _moved_and_edited_with_its_old_blob_missing(tmp_path)
    changes = {(c.status, c.old_path, c.new_path) for c in GitRepo.open(repo.path).diff(old, new)}
    assert {("deleted", "src/old.py", None), ("added", None, "src/new.py")} <= changes
    assert f"rename detection skipped for {old[:12]}..{new[:12]}" in caplog.text
    assert "missing or unreadable" in caplog.text


def test_a_blob_missing_from_the_clone_leaves_the_unedited_moves_of_that_diff_renames(
        tmp_path: Path) -> None:
    repo, old, new = _moved_and_edited_with_its_old_blob_missing(tmp_path)
    changes = {(c.status, c.old_path, c.new_path) for c in GitRepo.open(repo.path).diff(old, new)}
    assert ("renamed", "docs/guide.md", "docs/manual.md") in changes
    assert ("deleted", "docs/guide.md", None) not in changes


def _moved_and_edited_with_its_old_blob_missing(tmp_path: Path) -> tuple[RepoBuilder, str, str]:
    repo = RepoBuilder.init(tmp_path / "damaged")
    repo.write("src/old.py", "".join(f"def f{n}():\n    return {n}\n\n" for n in range(40)))
    repo.write("docs/guide.md", "# Guide\n\nHow to use it.\n")
    old = repo.commit("old")
    git(repo.path, "mv", "src/old.py", "src/new.py")
    git(repo.path, "mv", "docs/guide.md", "docs/manual.md")
    repo.write("src/new.py", "# moved\n" + (repo.path / "src/new.py").read_text())
    new = repo.commit("moved, one edited")
    deleted_blob = git(repo.path, "rev-parse", f"{old}:src/old.py").strip()
    (repo.path / ".git" / "objects" / deleted_blob[:2] / deleted_blob[2:]).unlink()
    return repo, old, new


def test_a_blob_missing_from_the_clone_is_warned_of_once_per_diff(tmp_path: Path,
                                                                  caplog) -> None:
    repo, old, new = _moved_and_edited_with_its_old_blob_missing(tmp_path)
    opened = GitRepo.open(repo.path)
    opened.diff(old, new)
    opened.diff(old, new)
    assert caplog.text.count(f"rename detection skipped for {old[:12]}..{new[:12]}") == 1

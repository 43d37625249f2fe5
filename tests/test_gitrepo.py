"""GitRepo against real repositories built with the git CLI."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from repo_builder import RepoBuilder, git

from freshmark.adapters.git.repo import FileGone, GitRepo, ObjectNotFound
from freshmark.core.errors import (
    BranchNotFound,
    EmptyRepository,
    NotARepository,
    PermanentError,
    RepositoryGone,
    UnsafePath,
)
from freshmark.core.tree import MODE_SYMLINK, FileChange, safe_relpath

ORDER_SERVICE = "".join(
    f"def step_{i}(order):\n    return order.total * {i}\n\n" for i in range(20)
)


@pytest.fixture
def shop(tmp_path: Path) -> RepoBuilder:
    repo = RepoBuilder.init(tmp_path / "shop")
    repo.write("src/orders/service.py", ORDER_SERVICE)
    repo.write("src/orders/models.py", "class Order:\n    total = 0\n")
    repo.write("README.md", "# shop\n")
    repo.commit("initial", when="2026-03-11T10:00:00Z")
    return repo


def _by_status(changes: list[FileChange]) -> dict[str, list[FileChange]]:
    grouped: dict[str, list[FileChange]] = {}
    for change in changes:
        grouped.setdefault(change.status, []).append(change)
    return grouped


# ---- opening and identity -----------------------------------------------------------------


def test_open_missing_path_raises_repository_gone(tmp_path: Path) -> None:
    with pytest.raises(RepositoryGone, match="does not exist"):
        GitRepo.open(tmp_path / "nowhere")


def test_open_plain_directory_raises_not_a_repository_naming_it(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository, match=str(plain)):
        GitRepo.open(plain)


def test_open_subdirectory_is_refused_unless_parents_are_searched(shop: RepoBuilder) -> None:
    with pytest.raises(NotARepository):
        GitRepo.open(shop.path / "src")
    assert GitRepo.open(shop.path / "src", search_parents=True).path == shop.path.resolve()


def test_key_is_resolved_work_tree_path(shop: RepoBuilder) -> None:
    repo = GitRepo.open(shop.path / ".." / "shop")
    assert repo.key() == f"path:{shop.path.resolve()}"


def test_default_name_is_work_tree_directory_name(shop: RepoBuilder) -> None:
    assert GitRepo.open(shop.path).default_name() == "shop"


def test_default_name_of_bare_repo_drops_git_suffix(shop: RepoBuilder, tmp_path: Path) -> None:
    git(tmp_path, "clone", "-q", "--bare", str(shop.path), "shop.git")
    repo = GitRepo.open(tmp_path / "shop.git")
    assert repo.is_bare and repo.default_name() == "shop"


# ---- branches and commits -----------------------------------------------------------------


def test_current_branch_is_checked_out_branch(shop: RepoBuilder) -> None:
    shop.branch("feature/cancel").checkout("feature/cancel")
    assert GitRepo.open(shop.path).current_branch() == "feature/cancel"


def test_current_branch_of_empty_repo_raises_empty_repository(tmp_path: Path) -> None:
    empty = RepoBuilder.init(tmp_path / "empty")
    with pytest.raises(EmptyRepository):
        GitRepo.open(empty.path).current_branch()


def test_head_naming_missing_branch_asks_for_branch(shop: RepoBuilder) -> None:
    git(shop.path, "symbolic-ref", "HEAD", "refs/heads/nothing-here")
    with pytest.raises(PermanentError, match="nothing-here.*--branch"):
        GitRepo.open(shop.path).current_branch()


def test_detached_head_asks_for_branch(shop: RepoBuilder) -> None:
    shop.checkout(shop.head())
    with pytest.raises(PermanentError, match="detached.*--branch"):
        GitRepo.open(shop.path).current_branch()


def test_branches_maps_each_local_branch_to_its_head(shop: RepoBuilder) -> None:
    first = shop.head()
    shop.branch("feature").checkout("feature")
    second = shop.write("src/new.py", "x = 1\n").commit("new")
    assert GitRepo.open(shop.path).branches() == {"main": first, "feature": second}


def test_branch_head_accepts_full_ref_name(shop: RepoBuilder) -> None:
    assert GitRepo.open(shop.path).branch_head("refs/heads/main") == shop.head()


def test_missing_branch_error_lists_known_branches(shop: RepoBuilder) -> None:
    shop.branch("develop")
    with pytest.raises(BranchNotFound, match="'nope'.*develop, main"):
        GitRepo.open(shop.path).branch_head("nope")


def test_branch_head_does_not_accept_commit_sha(shop: RepoBuilder) -> None:
    with pytest.raises(BranchNotFound):
        GitRepo.open(shop.path).branch_head(shop.head())


def test_branch_head_in_empty_repo_raises_empty_repository(tmp_path: Path) -> None:
    empty = RepoBuilder.init(tmp_path / "empty")
    with pytest.raises(EmptyRepository):
        GitRepo.open(empty.path).branch_head("main")


def test_commit_time_is_utc_aware(shop: RepoBuilder) -> None:
    when = GitRepo.open(shop.path).commit_time(shop.head())
    assert when == datetime(2026, 3, 11, 10, 0, tzinfo=UTC)


def test_unknown_commit_raises_object_not_found(shop: RepoBuilder) -> None:
    with pytest.raises(ObjectNotFound, match="0123456789"):
        GitRepo.open(shop.path).commit_time("0123456789" * 4)


def test_is_ancestor_follows_history(shop: RepoBuilder) -> None:
    first = shop.head()
    second = shop.write("a.py", "a = 1\n").commit("a")
    repo = GitRepo.open(shop.path)
    assert repo.is_ancestor(first, second) and repo.is_ancestor(second, second)
    assert not repo.is_ancestor(second, first)


def test_commits_between_counts_commits_new_has_and_old_lacks(shop: RepoBuilder) -> None:
    first = shop.head()
    shop.write("a.py", "a = 1\n").commit("a")
    last = shop.write("b.py", "b = 1\n").commit("b")
    repo = GitRepo.open(shop.path)
    assert (repo.commits_between(first, last), repo.commits_between(last, last)) == (2, 0)


def test_oldest_unindexed_commit_time_is_first_commit_after_old(shop: RepoBuilder) -> None:
    first = shop.head()
    shop.write("a.py", "a = 1\n").commit("a", when="2026-03-12T08:00:00Z")
    last = shop.write("b.py", "b = 1\n").commit("b", when="2026-03-13T08:00:00Z")
    repo = GitRepo.open(shop.path)
    assert repo.oldest_unindexed_commit_time(first, last) == datetime(2026, 3, 12, 8, tzinfo=UTC)
    assert repo.oldest_unindexed_commit_time(last, last) is None


def test_merge_base_of_diverged_branches_is_fork_point(shop: RepoBuilder) -> None:
    fork = shop.head()
    shop.branch("feature").checkout("feature")
    feature = shop.write("f.py", "f = 1\n").commit("f")
    shop.checkout("main")
    main = shop.write("m.py", "m = 1\n").commit("m")
    assert GitRepo.open(shop.path).merge_base(main, feature) == fork


# ---- trees and blobs ----------------------------------------------------------------------


def test_tree_files_lists_every_file_with_blob_and_size(shop: RepoBuilder) -> None:
    repo = GitRepo.open(shop.path)
    files = {f.path: f for f in repo.tree_files(shop.head())}
    assert sorted(files) == ["README.md", "src/orders/models.py", "src/orders/service.py"]
    models = files["src/orders/models.py"]
    assert models.size_bytes == len("class Order:\n    total = 0\n")
    assert models.blob_sha == git(shop.path, "rev-parse", "HEAD:src/orders/models.py")


def test_tree_files_keeps_unicode_and_space_names(shop: RepoBuilder) -> None:
    head = shop.write("docs/über uns.md", "hallo\n").write("src/my file.py", "x = 1\n").commit()
    paths = {f.path for f in GitRepo.open(shop.path).tree_files(head)}
    assert {"docs/über uns.md", "src/my file.py"} <= paths


def test_tree_files_yields_symlinks_with_link_mode(shop: RepoBuilder) -> None:
    os.symlink("src/orders/models.py", shop.path / "models_link.py")
    head = shop.commit("link")
    files = {f.path: f for f in GitRepo.open(shop.path).tree_files(head)}
    assert files["models_link.py"].mode == MODE_SYMLINK and files["models_link.py"].is_symlink


def _add_submodule(shop: RepoBuilder, tmp_path: Path) -> str:
    lib = RepoBuilder.init(tmp_path / "lib")
    lib.write("lib.py", "def lib():\n    pass\n").commit("lib")
    git(shop.path, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(lib.path), "deps/lib")
    return shop.commit("add submodule")


def test_submodule_is_counted_not_yielded(shop: RepoBuilder, tmp_path: Path) -> None:
    head = _add_submodule(shop, tmp_path)
    repo = GitRepo.open(shop.path)
    paths = [f.path for f in repo.tree_files(head)]
    assert "deps/lib" not in paths and not any(p.startswith("deps/lib/") for p in paths)
    assert repo.last_walk_submodules == ["deps/lib"] and repo.submodules(head) == ["deps/lib"]


def test_blob_at_returns_blob_sha_of_path(shop: RepoBuilder) -> None:
    expected = git(shop.path, "rev-parse", "HEAD:src/orders/service.py")
    assert GitRepo.open(shop.path).blob_at(shop.head(), "src/orders/service.py") == expected


def test_blob_at_absent_path_or_directory_is_none(shop: RepoBuilder) -> None:
    repo = GitRepo.open(shop.path)
    assert repo.blob_at(shop.head(), "src/gone.py") is None
    assert repo.blob_at(shop.head(), "src/orders") is None


def test_read_blob_returns_exact_bytes_of_binary_file(shop: RepoBuilder) -> None:
    payload = bytes(range(256)) * 4
    head = shop.write("assets/logo.bin", payload).commit("logo")
    repo = GitRepo.open(shop.path)
    blob = repo.blob_at(head, "assets/logo.bin")
    assert blob is not None and repo.read_blob(blob) == payload


def test_read_blob_of_unknown_sha_raises_object_not_found(shop: RepoBuilder) -> None:
    with pytest.raises(ObjectNotFound):
        GitRepo.open(shop.path).read_blob("ab" * 20)


# ---- diffs --------------------------------------------------------------------------------


def test_diff_from_nothing_adds_every_file(shop: RepoBuilder) -> None:
    changes = GitRepo.open(shop.path).diff(None, shop.head())
    assert {c.status for c in changes} == {"added"}
    assert len(changes) == 3 and all(c.old_path is None and c.new_blob for c in changes)


def test_diff_reports_modified_and_deleted_files(shop: RepoBuilder) -> None:
    old = shop.head()
    new = shop.write("README.md", "# shop v2\n").delete("src/orders/models.py").commit()
    grouped = _by_status(GitRepo.open(shop.path).diff(old, new))
    assert [c.new_path for c in grouped["modified"]] == ["README.md"]
    [deleted] = grouped["deleted"]
    assert (deleted.old_path, deleted.new_path, deleted.new_blob) == (
        "src/orders/models.py", None, None)


def test_diff_detects_rename_with_content_edits(shop: RepoBuilder) -> None:
    old = shop.head()
    shop.rename("src/orders/service.py", "src/billing/service.py")
    edited = ORDER_SERVICE.replace("step_3", "step_three")
    new = shop.write("src/billing/service.py", edited).commit("move")
    [change] = GitRepo.open(shop.path).diff(old, new)
    assert (change.status, change.old_path, change.new_path) == (
        "renamed", "src/orders/service.py", "src/billing/service.py")
    assert change.similarity is not None and 50 <= change.similarity < 100


def test_diff_rewritten_file_under_new_name_is_delete_plus_add(shop: RepoBuilder) -> None:
    old = shop.head()
    shop.delete("src/orders/service.py")
    new = shop.write("src/other.py", "print('completely different')\n").commit()
    statuses = sorted(c.status for c in GitRepo.open(shop.path).diff(old, new))
    assert statuses == ["added", "deleted"]


def test_diff_does_not_pair_moved_empty_files(shop: RepoBuilder) -> None:
    old = shop.write("pkg/__init__.py", "").commit()
    new = shop.rename("pkg/__init__.py", "lib/__init__.py").commit()
    statuses = sorted(c.status for c in GitRepo.open(shop.path).diff(old, new))
    assert statuses == ["added", "deleted"]


def test_diff_across_force_push_rewrite_is_plain_tree_diff(shop: RepoBuilder) -> None:
    base = shop.head()
    pushed = shop.write("src/orders/models.py", "class Order:\n    total = 1\n").commit("v1")
    shop.reset_hard(base)
    rewritten = shop.write("src/extra.py", "extra = True\n").commit("rewrite")
    repo = GitRepo.open(shop.path)
    assert not repo.is_ancestor(pushed, rewritten)
    grouped = _by_status(repo.diff(pushed, rewritten))
    assert [c.new_path for c in grouped["added"]] == ["src/extra.py"]
    assert [c.new_path for c in grouped["modified"]] == ["src/orders/models.py"]


def test_diff_between_branches_shows_branch_work(shop: RepoBuilder) -> None:
    shop.branch("feature").checkout("feature")
    shop.write("src/orders/refund.py", "def refund():\n    pass\n").commit("refund")
    repo = GitRepo.open(shop.path)
    changes = repo.diff(repo.branch_head("main"), repo.branch_head("feature"))
    assert [(c.status, c.new_path) for c in changes] == [("added", "src/orders/refund.py")]


def test_diff_marks_symlinks_by_new_mode(shop: RepoBuilder) -> None:
    old = shop.head()
    os.symlink("src/orders/models.py", shop.path / "models_link.py")
    new = shop.commit("link")
    [change] = GitRepo.open(shop.path).diff(old, new)
    assert (change.status, change.new_path, change.new_mode) == (
        "added", "models_link.py", MODE_SYMLINK)


def test_diff_file_replaced_by_symlink_is_modified(shop: RepoBuilder) -> None:
    old = shop.head()
    (shop.path / "README.md").unlink()
    os.symlink("src/orders/models.py", shop.path / "README.md")
    new = shop.commit("typechange")
    [change] = GitRepo.open(shop.path).diff(old, new)
    assert (change.status, change.new_path, change.new_mode) == (
        "modified", "README.md", MODE_SYMLINK)


def test_diff_skips_submodule_entries(shop: RepoBuilder, tmp_path: Path) -> None:
    old = shop.head()
    new = _add_submodule(shop, tmp_path)
    changes = GitRepo.open(shop.path).diff(old, new)
    assert [c.new_path for c in changes] == [".gitmodules"]


# ---- bare repositories --------------------------------------------------------------------


def test_bare_clone_reads_branches_trees_and_diffs(shop: RepoBuilder, tmp_path: Path) -> None:
    first = shop.head()
    second = shop.write("a.py", "a = 1\n").commit("a")
    git(tmp_path, "clone", "-q", "--bare", str(shop.path), "mirror.git")
    repo = GitRepo.open(tmp_path / "mirror.git")
    assert repo.current_branch() == "main" and repo.branch_head("main") == second
    assert len(list(repo.tree_files(second))) == 4
    assert [c.new_path for c in repo.diff(first, second)] == ["a.py"]


def test_worktree_changes_in_bare_repo_raise_permanent_error(
    shop: RepoBuilder, tmp_path: Path
) -> None:
    git(tmp_path, "clone", "-q", "--bare", str(shop.path), "mirror.git")
    with pytest.raises(PermanentError, match="bare"):
        GitRepo.open(tmp_path / "mirror.git").worktree_changes()


# ---- work tree ----------------------------------------------------------------------------


def test_worktree_changes_cover_modified_deleted_and_untracked(shop: RepoBuilder) -> None:
    shop.write("README.md", "# edited\n").write("src/draft.py", "draft = 1\n")
    (shop.path / "src/orders/models.py").unlink()
    grouped = _by_status(GitRepo.open(shop.path).worktree_changes())
    assert [c.new_path for c in grouped["modified"]] == ["README.md"]
    assert [c.old_path for c in grouped["deleted"]] == ["src/orders/models.py"]
    [added] = grouped["added"]
    expected_blob = git(shop.path, "hash-object", "src/draft.py")
    assert (added.new_path, added.new_blob) == ("src/draft.py", expected_blob)


def test_worktree_changes_before_first_commit_are_all_added(tmp_path: Path) -> None:
    fresh = RepoBuilder.init(tmp_path / "fresh").write("a.py", "a = 1\n")
    changes = GitRepo.open(fresh.path).worktree_changes()
    assert [(c.status, c.new_path) for c in changes] == [("added", "a.py")]


def test_worktree_changes_include_staged_files(shop: RepoBuilder) -> None:
    shop.write("src/staged.py", "staged = 1\n")
    git(shop.path, "add", "src/staged.py")
    changes = GitRepo.open(shop.path).worktree_changes()
    assert [(c.status, c.new_path) for c in changes] == [("added", "src/staged.py")]


def test_worktree_changes_skip_ignored_files(shop: RepoBuilder) -> None:
    shop.write(".gitignore", "*.log\n").commit("ignore logs")
    shop.write("debug.log", "noise\n")
    assert GitRepo.open(shop.path).worktree_changes() == []


def test_worktree_move_without_edit_is_reported_as_rename(shop: RepoBuilder) -> None:
    (shop.path / "src/orders/models.py").rename(shop.path / "src/models.py")
    [change] = GitRepo.open(shop.path).worktree_changes()
    assert (change.status, change.old_path, change.new_path, change.similarity) == (
        "renamed", "src/orders/models.py", "src/models.py", 100)


def test_read_worktree_file_returns_uncommitted_bytes(shop: RepoBuilder) -> None:
    shop.write("src/orders/models.py", "class Order:\n    total = 42\n")
    data = GitRepo.open(shop.path).read_worktree_file("src/orders/models.py")
    assert data == b"class Order:\n    total = 42\n"


def test_read_worktree_file_follows_symlink_inside_repo(shop: RepoBuilder) -> None:
    os.symlink("orders/models.py", shop.path / "src/models_link.py")
    data = GitRepo.open(shop.path).read_worktree_file("src/models_link.py")
    assert data.startswith(b"class Order")


def test_read_worktree_file_refuses_symlink_outside_repo(shop: RepoBuilder, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token\n")
    os.symlink(secret, shop.path / "leak.txt")
    with pytest.raises(UnsafePath, match="outside"):
        GitRepo.open(shop.path).read_worktree_file("leak.txt")


def test_read_worktree_file_refuses_symlinked_directory_outside(
    shop: RepoBuilder, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.py").write_text("x = 1\n")
    os.symlink(outside, shop.path / "linked")
    with pytest.raises(UnsafePath):
        GitRepo.open(shop.path).read_worktree_file("linked/data.py")


def test_read_worktree_file_refuses_parent_traversal(shop: RepoBuilder) -> None:
    with pytest.raises(UnsafePath):
        GitRepo.open(shop.path).read_worktree_file("src/../../etc/passwd")


def test_read_worktree_file_refuses_git_directory(shop: RepoBuilder) -> None:
    with pytest.raises(UnsafePath):
        GitRepo.open(shop.path).read_worktree_file(".git/config")


def test_read_worktree_file_of_missing_file_raises_file_gone(shop: RepoBuilder) -> None:
    with pytest.raises(FileGone, match="src/missing.py"):
        GitRepo.open(shop.path).read_worktree_file("src/missing.py")


def test_read_worktree_file_of_directory_raises_file_gone(shop: RepoBuilder) -> None:
    with pytest.raises(FileGone):
        GitRepo.open(shop.path).read_worktree_file("src/orders")


# ---- safe_relpath -------------------------------------------------------------------------


def test_safe_relpath_normalises_to_posix() -> None:
    assert safe_relpath(".\\src\\orders//./service.py") == "src/orders/service.py"


@pytest.mark.parametrize("bad", ["", ".", "/etc/passwd", "C:/x.py", "a/../../b", "a\0b", "..\\x"])
def test_safe_relpath_rejects_unsafe_paths(bad: str) -> None:
    with pytest.raises(UnsafePath):
        safe_relpath(bad)


# ---- .gitattributes -----------------------------------------------------------------------


def test_attributes_report_linguist_generated_from_root_file(shop: RepoBuilder) -> None:
    head = shop.write(".gitattributes", "*.pb.go linguist-generated=true\n").commit()
    repo = GitRepo.open(shop.path)
    assert repo.attributes(head, "api/v1/orders.pb.go") == {"linguist-generated": "true"}
    assert repo.attributes(head, "api/v1/orders.go") == {}


def test_attributes_deeper_file_overrides_root(shop: RepoBuilder) -> None:
    shop.write(".gitattributes", "vendor/** linguist-vendored\n")
    head = shop.write("vendor/ours/.gitattributes", "* -linguist-vendored\n").commit()
    repo = GitRepo.open(shop.path)
    assert repo.attributes(head, "vendor/lib/a.go") == {"linguist-vendored": True}
    assert repo.attributes(head, "vendor/ours/a.go") == {"linguist-vendored": False}


def test_attributes_slash_pattern_is_anchored_to_its_directory(shop: RepoBuilder) -> None:
    head = shop.write("src/.gitattributes", "gen/*.py linguist-generated\n").commit()
    repo = GitRepo.open(shop.path)
    assert repo.attributes(head, "src/gen/a.py") == {"linguist-generated": True}
    assert repo.attributes(head, "src/x/gen/a.py") == {}
    assert repo.attributes(head, "src/gen/deeper/a.py") == {}


def test_attributes_binary_macro_sets_binary_and_unsets_diff(shop: RepoBuilder) -> None:
    head = shop.write(".gitattributes", "*.dat binary\n").commit()
    attrs = GitRepo.open(shop.path).attributes(head, "assets/x.dat")
    assert attrs == {"binary": True, "diff": False, "text": False}


def test_attributes_come_from_the_commit_not_the_work_tree(shop: RepoBuilder) -> None:
    head = shop.write(".gitattributes", "*.py linguist-generated\n").commit()
    shop.write(".gitattributes", "")
    assert GitRepo.open(shop.path).attributes(head, "a.py") == {"linguist-generated": True}


def test_attributes_work_in_bare_repo(shop: RepoBuilder, tmp_path: Path) -> None:
    head = shop.write(".gitattributes", "third/** linguist-vendored\n").commit()
    git(tmp_path, "clone", "-q", "--bare", str(shop.path), "mirror.git")
    repo = GitRepo.open(tmp_path / "mirror.git")
    assert repo.attributes(head, "third/x/y.c") == {"linguist-vendored": True}


def test_attributes_accept_tab_separators_and_quoted_patterns(shop: RepoBuilder) -> None:
    text = '"my dir/*.py" linguist-generated\n*.py\tlinguist-vendored=true\n'
    head = shop.write(".gitattributes", text).commit()
    attrs = GitRepo.open(shop.path).attributes(head, "my dir/x.py")
    assert attrs == {"linguist-generated": True, "linguist-vendored": "true"}

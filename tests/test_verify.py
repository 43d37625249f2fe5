"""Verification at use time (SPEC §2) against real git histories: every verdict and its reason.

Stamps here are made from git directly (as the indexer would stamp them at a commit), so each
test pins exactly one situation; the indexed end-to-end path is in test_seed_scenario.py.
"""

from __future__ import annotations

import hashlib
import shutil

import pygit2
import pytest
from repo_builder import RepoBuilder
from search_fixtures import verifier

from freshmark.adapters.git.repo import GitRepo, ObjectNotFound
from freshmark.core.chunking import symbol_spans
from freshmark.core.errors import BadInput, UnsafePath
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import Target, Verdict
from freshmark.services.listed_files import verify_file_hash
from freshmark.services.open_branch import resolve_target

RULE_V1 = '''def ensure_cancellable(order):
    if order.shipped:
        raise ValueError("shipped")


def total(order):
    return sum(order.items)
'''

RULE_V2 = '''def is_final(order):
    return order.shipped or order.delivered


def ensure_cancellable(order):
    if is_final(order):
        raise ValueError("shipped or delivered")


def total(order):
    return sum(order.items)
'''

PATH = "src/domain/order.py"


def stamp(repo: RepoBuilder, at: str, file_path: str, name: str, /,
          **overrides: object) -> ChunkRecord:
    """The stamp the indexer gives symbol ``name`` of ``file_path`` at commit ``at``."""
    commit, path, symbol = at, file_path, name
    git_repo = GitRepo.open(repo.path)
    blob = git_repo.blob_at(commit, path)
    assert blob is not None
    data = git_repo.read_blob(blob)
    start, end = symbol_spans(path, data.decode())[symbol]
    values = dict(
        repo=repo.path.name, branch="main", commit=commit, path=path, symbol=symbol,
        start_line=start, end_line=end, indexed_at="2026-03-11T10:00:00Z", blob_sha=blob,
        content_sha256=hashlib.sha256(data).hexdigest(), kind="function", language="python",
        text="\n".join(data.decode().splitlines()[start - 1:end]),
    )
    values.update(overrides)
    return ChunkRecord(**values)


@pytest.fixture
def repo(make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write(PATH, RULE_V1).write("README.md", "# shop\n")
    repo.commit("initial", when="2026-03-11T10:00:00Z")
    return repo


def test_chunk_indexed_at_the_head_is_current_without_any_git_read(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    check = verifier(repo)
    result = check.verify(record)
    assert result.verdict is Verdict.CURRENT
    assert check.git_reads == 0


def test_fast_path_answers_with_the_object_database_gone(repo, tmp_path):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    older = stamp(repo, repo.head(), PATH, "total", commit="0" * 40)
    check = verifier(repo)
    shutil.move(repo.path / ".git" / "objects", tmp_path / "objects")
    assert check.verify(record).verdict is Verdict.CURRENT
    with pytest.raises((ObjectNotFound, pygit2.GitError)):  # past the fast path: objects needed
        check.verify(older)


def test_older_commit_with_the_same_blob_is_older_identical(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    repo.write("README.md", "# shop\n\nmore\n").commit("docs only")
    check = verifier(repo)
    result = check.verify(record)
    assert result.verdict is Verdict.OLDER_IDENTICAL
    assert record.commit[:7] in result.reason
    assert check.git_reads == 1  # one tree lookup


def test_changed_file_gives_the_symbols_current_lines_not_the_cached_text(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    record.text = "stale cached text"
    repo.write(PATH, RULE_V2).commit("deliveries")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (5, 7)
    assert result.current_text is not None and "is_final(order)" in result.current_text
    assert "now at L5-L7 (was L1-L3)" in result.reason


def test_symbol_gone_from_changed_file_is_historical(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    repo.write(PATH, "def total(order):\n    return 0\n").commit("drop rule")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert "ensure_cancellable no longer exists" in result.reason


def test_file_deleted_since_indexing_is_historical_before_any_tombstone(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    repo.delete(PATH).commit("drop domain")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert "live in the index when this result was read" in result.reason
    assert "deleted or renamed" in result.reason


def test_tombstoned_deleted_file_says_module_deleted_in_its_commit(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    gone_in = repo.delete(PATH).commit("drop domain")
    record.status, record.tombstoned_in = "tombstoned", gone_in
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert result.reason == f"module deleted in {gone_in[:7]}"


def test_tombstoned_symbol_in_a_kept_file_says_the_symbol_was_removed(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    gone_in = repo.write(PATH, "def total(order):\n    return 0\n").commit("drop rule")
    record.status, record.tombstoned_in = "tombstoned", gone_in
    result = verifier(repo).verify(record)
    assert result.reason == f"symbol ensure_cancellable removed from {PATH} in {gone_in[:7]}"


def test_a_symbol_tombstoned_runs_later_is_said_removed_in_the_commit_that_removed_it(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    removed_in = repo.write(PATH, "def total(order):\n    return 0\n").commit("drop rule")
    repo.write(PATH, "def total(order):\n    return 1\n").commit("fix total")
    indexed_at = repo.write("README.md", "notes\n").commit("notes")
    record.status, record.tombstoned_in = "tombstoned", indexed_at
    result = verifier(repo).verify(record)
    assert result.reason == f"symbol ensure_cancellable removed from {PATH} in {removed_in[:7]}"


def test_a_module_deleted_before_the_run_that_tombstoned_it_names_its_deletion(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    gone_in = repo.delete(PATH).commit("drop domain")
    indexed_at = repo.write("README.md", "notes\n").commit("notes")
    record.status, record.tombstoned_in = "tombstoned", indexed_at
    assert verifier(repo).verify(record).reason == f"module deleted in {gone_in[:7]}"


def test_tombstoned_rename_names_its_successor(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    moved_in = repo.rename(PATH, "src/rules/order.py").commit("move")
    record.status, record.tombstoned_in = "tombstoned", moved_in
    record.successor = "src/rules/order.py"
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert result.reason == (f"file renamed to src/rules/order.py in {moved_in[:7]}; "
                             "ensure_cancellable is now at src/rules/order.py#L1-L3")


def test_getter_defined_through_a_call_is_found_at_its_new_lines(repo):
    getter = "defineGetter(req, 'host', function host(){\n  return this.get('Host');\n});\n"
    repo.write("lib/request.js", getter).commit("host getter")
    record = stamp(repo, repo.head(), "lib/request.js", "req.host", language="javascript")
    above = "/**\n * Protocol.\n */\n\ndefineGetter(req, 'protocol', () => 'http');\n\n"
    repo.write("lib/request.js", above + getter.replace("'Host'", "'X-Host'")).commit("edit")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (7, 9)


def test_changed_text_file_window_follows_its_line_range(repo):
    repo.write("docs/notes.txt", "alpha\nbeta\ngamma\n").commit("notes")
    record = stamp(repo, repo.head(), "docs/notes.txt", "<module>", kind="window")
    repo.write("docs/notes.txt", "alpha\nBETA\ngamma\ndelta\n").commit("edit notes")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (1, 3)
    assert result.current_text == "alpha\nBETA\ngamma\n"


@pytest.mark.parametrize(("file_kind", "why"), [
    ("generated", "generated code"), ("backup", "backup file"),
    ("fixture", "test fixture"), ("vendored", "vendored third-party code"),
])
def test_excluded_file_kinds_say_why(repo, file_kind, why):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable", file_kind=file_kind)
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.EXCLUDED
    assert result.reason.startswith(why)


@pytest.mark.parametrize("field", ["commit", "blob_sha", "content_sha256", "indexed_at",
                                   "path", "symbol"])
def test_missing_metadata_is_unverifiable_and_names_the_field(repo, field):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable", **{field: ""})
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.UNVERIFIABLE
    assert field in result.reason


def test_missing_line_numbers_are_unverifiable(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable", start_line=0, end_line=0)
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.UNVERIFIABLE and "start_line" in result.reason


# -- the work tree --------------------------------------------------------------------------------
def test_uncommitted_edit_counts_only_with_worktree(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    repo.write(PATH, RULE_V2)  # not committed
    assert verifier(repo).verify(record).verdict is Verdict.CURRENT
    result = verifier(repo, worktree=True).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert result.current_start_line == 5 and "work tree" in result.reason


def test_clean_worktree_file_at_head_is_current_without_reading_it(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    repo.write("README.md", "# edited\n")  # another file is dirty
    check = verifier(repo, worktree=True)
    assert check.verify(record).verdict is Verdict.CURRENT
    assert check.git_reads == 1  # the one status call, no file read


def test_file_deleted_in_the_worktree_is_historical(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    (repo.path / PATH).unlink()
    result = verifier(repo, worktree=True).verify(record)
    assert result.verdict is Verdict.HISTORICAL and "work tree" in result.reason


def test_edit_reverted_in_the_worktree_is_current_again(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    repo.write(PATH, RULE_V1 + "\n")
    repo.write(PATH, RULE_V1)
    assert verifier(repo, worktree=True).verify(record).verdict is Verdict.CURRENT


def test_worktree_on_another_branch_is_refused(repo):
    repo.branch("other")
    git_repo = GitRepo.open(repo.path)
    with pytest.raises(BadInput, match="checked-out branch 'main'"):
        resolve_target(git_repo, "other", worktree=True)


def test_symlink_leaving_the_worktree_is_refused(repo, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (repo.path / "src" / "link.py").symlink_to(outside)
    check = verifier(repo, worktree=True)
    with pytest.raises(UnsafePath):
        check.current_bytes("src/link.py")


# -- the seed's snippet list ----------------------------------------------------------------------
def test_file_hash_prefix_verdicts_follow_the_seed(repo):
    data = (repo.path / PATH).read_bytes()
    now = hashlib.sha256(data).hexdigest()
    check = verifier(repo)
    assert verify_file_hash(check, PATH, now[:12]).verdict is Verdict.CURRENT
    assert verify_file_hash(check, PATH, "0" * 12).verdict is Verdict.CHANGED
    assert verify_file_hash(check, "src/never_existed.py", now[:12]).verdict is Verdict.UNVERIFIABLE
    assert verify_file_hash(check, PATH, None).verdict is Verdict.UNVERIFIABLE


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "src/../../x"])
def test_file_hash_refuses_paths_leaving_the_repo(repo, path):
    with pytest.raises(UnsafePath):
        verify_file_hash(verifier(repo), path, "abcdef12")


def test_target_label_names_branch_and_short_head(repo):
    target = Target("main", repo.head(), worktree=False)
    assert target.label == f"main@{repo.head()[:7]}"
    assert Target("main", repo.head(), worktree=True).label.startswith("work tree on main@")


def test_verification_seed_words(repo):
    record = stamp(repo, repo.head(), PATH, "ensure_cancellable")
    assert verifier(repo).verify(record).seed_word == "可用"


# A definition longer than a chunk is indexed in parts (SPEC §5), each part carrying its head.
LONG = ("def helper():\n    return 1\n\n\ndef settle(value):\n"
        + "".join(f"    total_{n} = value + {n}\n" for n in range(200))
        + "    return total_199\n")


def parts_of(repo: RepoBuilder, at: str) -> list[ChunkRecord]:
    from freshmark.core.chunking import chunk_text

    git_repo = GitRepo.open(repo.path)
    blob = git_repo.blob_at(at, "src/settle.py")
    assert blob is not None
    data = git_repo.read_blob(blob)
    return [stamp(repo, at, PATH, "total", path="src/settle.py", symbol=chunk.symbol,
                  start_line=chunk.start_line, end_line=chunk.end_line, text=chunk.text,
                  blob_sha=blob, content_sha256=hashlib.sha256(data).hexdigest())
            for chunk in chunk_text("src/settle.py", data.decode(), "python")
            if chunk.symbol == "settle"]


def test_a_part_of_a_split_definition_shifted_is_found_at_its_own_lines(repo):
    repo.write("src/settle.py", LONG).commit("settle")
    parts = parts_of(repo, repo.head())
    assert len(parts) >= 2
    repo.write("src/settle.py", LONG.replace("return 1\n", "value = 1\n    return value\n"))
    repo.commit("helper grows by a line")
    for part in parts:
        result = verifier(repo).verify(part)
        assert result.verdict is Verdict.CHANGED and "its code is as indexed" in result.reason
        assert (result.current_start_line, result.current_end_line) == (
            part.start_line + 1, part.end_line + 1)


def test_an_edited_part_of_a_split_definition_is_found_at_the_lines_it_kept(repo):
    repo.write("src/settle.py", LONG).commit("settle")
    later = parts_of(repo, repo.head())[-1]
    grown = LONG.replace("return 1\n", "value = 1\n    return value\n")
    repo.write("src/settle.py", grown.replace("return total_199", "return total_198"))
    repo.commit("edit the last part, the helper above grows by a line")
    result = verifier(repo).verify(later)
    assert result.verdict is Verdict.CHANGED and "re-read before use" in result.reason
    assert (result.current_start_line, result.current_end_line) == (
        later.start_line + 1, later.end_line + 1)


def test_a_part_of_a_split_definition_mostly_rewritten_is_the_whole_definition(repo):
    repo.write("src/settle.py", LONG).commit("settle")
    later = parts_of(repo, repo.head())[-1]
    rewritten = LONG.replace("value + 1", "value * 1")
    for n in range(100, 200):
        rewritten = rewritten.replace(f"value + {n}\n", f"value - {n}\n")
    repo.write("src/settle.py", rewritten).commit("rewrite the last part")
    result = verifier(repo).verify(later)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (5, len(LONG.splitlines()))


# A docstring longer than a chunk is parts of its own, windows of its lines.
LONG_DOC = ("def helper():\n    return 1\n\n\ndef settle(value):\n    \"\"\"Settle.\n\n"
            + "\n".join(f"    Paragraph {n}: the value is settled.\n    Its rule {n} holds.\n"
                         for n in range(100))
            + "    \"\"\"\n    return value\n")


def test_a_window_of_a_split_docstring_shifted_is_found_at_its_own_lines(repo):
    repo.write("src/settle.py", LONG_DOC).commit("settle")
    windows = [p for p in parts_of(repo, repo.head()) if "Paragraph 50:" in p.text]
    assert len(windows) == 1 and windows[0].head_lines == 1
    assert "Paragraph 0:" not in windows[0].text  # a window, not the whole docstring
    repo.write("src/settle.py", LONG_DOC.replace("return 1\n", "value = 1\n    return value\n"))
    repo.commit("helper grows by a line")
    result = verifier(repo).verify(windows[0])
    assert result.verdict is Verdict.CHANGED and "its code is as indexed" in result.reason
    assert (result.current_start_line, result.current_end_line) == (
        windows[0].start_line + 1, windows[0].end_line + 1)


WAITS = '''class wait_fixed:
    def __init__(self, wait):
        self.wait = wait

    def __call__(self, state):
        return self.wait


class wait_none(wait_fixed):
    def __init__(self):
        super().__init__(0)
'''


def outline_of(repo: RepoBuilder, name: str) -> ChunkRecord:
    from freshmark.core.chunking import chunk_text

    (chunk,) = [c for c in chunk_text("src/wait.py", WAITS, "python") if c.symbol == name]
    return stamp(repo, repo.head(), "src/wait.py", name, kind=chunk.kind, text=chunk.text)


def test_an_outline_untouched_in_a_changed_file_is_its_code_as_indexed(repo):
    repo.write("src/wait.py", WAITS).commit("waits")
    record = outline_of(repo, "wait_none")
    assert record.kind == "class"
    repo.write("src/wait.py", WAITS.replace("return self.wait", "return self.wait\n        # ok"))
    repo.commit("edit a method of another class")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.CHANGED and "its code is as indexed" in result.reason
    assert (result.current_start_line, result.current_end_line) == (10, 12)


def test_an_outline_whose_member_changed_is_to_be_read_again(repo):
    repo.write("src/wait.py", WAITS).commit("waits")
    record = outline_of(repo, "wait_fixed")
    repo.write("src/wait.py", WAITS.replace("return self.wait", "return self.wait + 1"))
    repo.commit("edit a member")
    result = verifier(repo).verify(record)
    assert result.verdict is Verdict.CHANGED and "re-read before use" in result.reason

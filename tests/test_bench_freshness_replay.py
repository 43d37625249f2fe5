"""The freshness bench tells a push whose changed symbol a later commit removed (superseded)
from one that was lost: it asks whether the file at the covering stamp still defines it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import freshness_replay as fr  # noqa: E402

PAGER = '''\
class _SkipClose:
    def __init__(self, stream):
        self.stream = stream

    def __getattr__(self, name):
        return getattr(self.stream, name)


def pager(stream):
    return _SkipClose(stream)
'''

REFACTORED = '''\
def pager(stream):
    return stream
'''


def _commit(work: Path, text: str, message: str) -> str:
    (work / "pager.py").write_text(text)
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-q", "-m", message], check=True)
    return subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "config", "user.email", "t@example.com"], check=True)
    subprocess.run(["git", "-C", str(work), "config", "user.name", "t"], check=True)
    added = _commit(work, PAGER, "add the pager wrapper")
    removed = _commit(work, REFACTORED, "refactor the pager")
    return work / ".git", added, removed


def test_a_symbol_the_commit_defines_is_found_at_that_commit(tmp_path: Path) -> None:
    git_dir, added, _ = _repo(tmp_path)
    assert fr.defines(git_dir, added, "pager.py", "_SkipClose.__getattr__")


def test_a_symbol_a_later_commit_removed_is_not_defined_there(tmp_path: Path) -> None:
    git_dir, _, removed = _repo(tmp_path)
    assert not fr.defines(git_dir, removed, "pager.py", "_SkipClose.__getattr__")
    assert fr.defines(git_dir, removed, "pager.py", "pager")


def test_a_file_gone_at_the_commit_defines_nothing(tmp_path: Path) -> None:
    git_dir, added, _ = _repo(tmp_path)
    assert not fr.defines(git_dir, added, "gone.py", "pager")

"""Build real git repositories in tests with the git CLI (no mocks, real history)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **_GIT_ENV, **(env or {})}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=full_env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


class RepoBuilder:
    """A working copy with a fluent API: write, delete, rename, commit, branch, checkout.

    >>> repo = RepoBuilder.init(tmp_path / "shop")
    >>> repo.write("src/a.py", "def a():\\n    return 1\\n").commit("add a")
    """

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def init(cls, path: Path, branch: str = "main", bare: bool = False) -> RepoBuilder:
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", f"--initial-branch={branch}", *(["--bare"] if bare else []))
        return cls(path)

    def write(self, rel: str, content: str | bytes) -> RepoBuilder:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        else:
            target.write_bytes(content)
        return self

    def delete(self, rel: str) -> RepoBuilder:
        git(self.path, "rm", "-q", "-r", rel)
        return self

    def rename(self, old: str, new: str) -> RepoBuilder:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        git(self.path, "mv", old, new)
        return self

    def commit(self, message: str = "change", when: str | None = None) -> str:
        """Commit everything in the work tree; returns the new commit sha.

        ``when`` (e.g. ``"2026-03-11T10:00:00Z"``) pins author and committer dates.
        """
        git(self.path, "add", "-A")
        env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else None
        git(self.path, "commit", "-q", "--allow-empty", "-m", message, env=env)
        return self.head()

    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD")

    def branch(self, name: str, start: str = "HEAD") -> RepoBuilder:
        git(self.path, "branch", name, start)
        return self

    def checkout(self, name: str) -> RepoBuilder:
        git(self.path, "checkout", "-q", name)
        return self

    def reset_hard(self, rev: str) -> RepoBuilder:
        git(self.path, "reset", "-q", "--hard", rev)
        return self

    def push(self, remote: str, refspec: str, force: bool = False) -> RepoBuilder:
        git(self.path, "push", "-q", *(["--force"] if force else []), remote, refspec)
        return self

    def add_remote(self, name: str, url: str) -> RepoBuilder:
        git(self.path, "remote", "add", name, url)
        return self

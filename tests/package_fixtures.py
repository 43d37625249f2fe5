"""Real code for ranking tests: click and parts of celery, kombu and redis-py as installed here,
committed to a git repository built in the fixture and indexed with the real indexer (the fast
embedder tier)."""

from __future__ import annotations

from pathlib import Path

import celery
import click
import kombu
import redis
from repo_builder import RepoBuilder

from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo

# (package, files inside it); click whole, the others' modules about tasks and connections.
SOURCES = {
    click: None,
    celery: ["app/task.py", "app/autoretry.py", "exceptions.py"],
    kombu: ["connection.py", "pools.py", "resource.py"],
    redis: ["connection.py", "retry.py", "backoff.py"],
}


def build_packages(root: Path) -> tuple[Path, Settings]:
    """The repository under ``root``, committed and indexed: its path and the settings."""
    repo = RepoBuilder.init(root / "repo")
    for package, files in SOURCES.items():
        base = Path(package.__file__).parent
        chosen = [base / f for f in files] if files else sorted(base.glob("*.py"))
        for path in chosen:
            repo.write(f"{package.__name__}/{path.relative_to(base)}", path.read_text())
    repo.commit("real packages")
    settings = Settings(home=root / "home", embedder="hashing")
    index_repo(IndexRequest(repo.path), settings=settings, config=Config())
    return repo.path, settings

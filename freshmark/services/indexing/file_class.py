"""Whether a file of a commit is indexed, and why not: the one decision an index run takes for
each file, and what ``chunks --path`` says of a file that has no chunk."""

from __future__ import annotations

from collections.abc import Mapping

from freshmark.adapters.git.repo import GitRepo, ObjectNotFound
from freshmark.core.classify import (
    SKIP_BINARY,
    SKIP_IMAGE,
    SKIP_OVERSIZED,
    FileClass,
    classify,
)
from freshmark.core.config import ClassifyRules


def classify_blob(repo: GitRepo, path: str, blob_sha: str, rules: ClassifyRules,
                  attributes: Mapping[str, str | bool], is_symlink: bool
                  ) -> tuple[FileClass, bytes | None]:
    """The file's class and, when it is indexed, its bytes. Path rules and the size from the
    object header come first: an oversized blob (hundreds of MB) is never read into memory.
    Raises ObjectNotFound for a blob the clone lacks."""
    verdict = classify(path, b"", rules, attributes, is_symlink=is_symlink)
    limit = rules.max_file_bytes
    if verdict.indexed and limit and repo.blob_size(blob_sha) > limit:
        return FileClass(verdict.file_kind, False, SKIP_OVERSIZED), None
    if not verdict.indexed:
        return verdict, None
    data = repo.read_blob(blob_sha)
    return classify(path, data, rules, attributes, is_symlink=is_symlink), data


def why_not_indexed(repo: GitRepo, commit: str, path: str, rules: ClassifyRules) -> str | None:
    """Why ``path`` at ``commit`` has no chunk, in words; None when it is indexed."""
    try:
        blob_sha = repo.blob_at(commit, path)
        if blob_sha is None:
            return f"{path} is not a file at {commit[:7]}"
        verdict, data = classify_blob(repo, path, blob_sha, rules,
                                      repo.attributes(commit, path), is_symlink=False)
    except (ObjectNotFound, ValueError) as exc:
        return f"{path} cannot be read at {commit[:7]}: {exc}"
    if verdict.indexed:
        # A file of blank lines (an empty ``__init__.py``) is indexed and holds no chunk.
        return f"{path} is not indexed: empty" if data is not None and not data.strip() \
            else None
    if verdict.skip_reason == SKIP_OVERSIZED:
        return (f"{path} is not indexed: oversized, {repo.blob_size(blob_sha):,} bytes, over "
                f"the {rules.max_file_bytes:,}-byte limit (max_file_bytes)")
    if verdict.skip_reason == SKIP_IMAGE:
        return f"{path} is not indexed: image, a picture stored as text, not prose or code"
    # A binary file's path kind says nothing of it (yargs-logo.png is no "source").
    kind = "" if verdict.skip_reason == SKIP_BINARY else f" ({verdict.file_kind})"
    return f"{path} is not indexed: {verdict.skip_reason}{kind}"

"""The ``search`` use case (CLI, HTTP and MCP call it): chunks or files, verified and cited.

``search``: resolve the repository and branch -> open the branch index -> hybrid search ->
verify every result against the branch head (or the work tree) -> results that carry their
stamp, verdict, reason and citation header, and a response that names the index it came from
(collection, indexed commit per layer, build time). ``search_files`` answers with files. Both
count the verdicts they give per repository and branch.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.adapters.git.repo import GitRepo, ObjectNotFound
from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.core.chunking import split_lines
from freshmark.core.chunking.model import CONTAINER_KINDS, FUNCTION_KINDS
from freshmark.core.citation import elides_members
from freshmark.core.config import Config, load_config
from freshmark.core.declarations import declaring_row, kept_row_line
from freshmark.core.fusion import Candidate
from freshmark.core.lru import LruCache
from freshmark.core.messages import message_row
from freshmark.core.ports import BranchView, Embedder
from freshmark.core.request import MAX_K, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.structure import named_by
from freshmark.core.tree import FileChange
from freshmark.core.verdicts import Target, Verdict
from freshmark.services.open_branch import (
    OpenedBranch,
    count_verdicts,
    embedder_for,
    index_info,
    open_branch,
)
from freshmark.services.repos import RepoHandle
from freshmark.services.retrieval.channels import named_tombstones
from freshmark.services.retrieval.drift import attach_drift
from freshmark.services.retrieval.hybrid import (
    CHUNKS_PER_FILE,
    file_search,
    hybrid_search,
    looked_up_names,
    pasted_message_windows,
)
from freshmark.services.retrieval.parts import mark_parts
from freshmark.services.retrieval.results import VerifiedResult, verify_results


@dataclass
class SearchResponse:
    query: str
    repo: str
    target: Target
    index: dict[str, Any]
    results: list[VerifiedResult]
    timings: dict[str, float]
    # Results passed over as historical (code gone since indexing) while the k were filled.
    hidden_historical: int = 0
    # A look-up by name: deleted (tombstoned) definitions of that name passed over.
    deleted_named: int = 0
    # Work-tree mode: what the index of commits cannot hold yet (``uncommitted_summary``).
    uncommitted: dict[str, Any] | None = None
    # The index behind the head: what it does not hold yet (``unindexed_summary``).
    unindexed: dict[str, Any] | None = None
    # Served files edited in the work tree since the head (not ``--worktree``), and those
    # deleted or moved away there: verified against the head, not against what is on disk.
    edited: list[str] | None = None
    gone: list[str] | None = None

    def verdict_counts(self) -> dict[str, int]:
        return dict(Counter(str(r.verification.verdict) for r in self.results))

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "repo": self.repo,
            "target": self.target.to_dict(),
            "index": self.index,
            "results": [r.to_dict() for r in self.results],
            "verdicts": self.verdict_counts(),
            "hidden_historical": self.hidden_historical,
            "deleted_named": self.deleted_named,
            "uncommitted": self.uncommitted,
            "unindexed": self.unindexed,
            "edited": self.edited,
            "gone": self.gone,
            "timings": self.timings,
        }


def _opened(request: SearchRequest, repo_arg: str | RepoHandle, settings: Settings,
            config: Config | None, store: Store | None,
            embedder: Embedder | None) -> tuple[OpenedBranch, BranchView, Embedder]:
    """The branch index the request searches, and the embedder it was built with."""
    config = config if config is not None else load_config(settings.config_path)
    opened = open_branch(repo_arg, settings=settings, config=config, branch=request.branch,
                         worktree=request.worktree, store=store, need_index=True)
    assert opened.index is not None
    embedder = embedder if embedder is not None else embedder_for(settings, opened.index)
    return opened, opened.index, embedder


def _usable(results: list[VerifiedResult], include_history: bool) -> list[VerifiedResult]:
    """Results a default search may serve: a chunk whose file was deleted or renamed since it
    was indexed (``historical`` at query time, not yet tombstoned) is hidden like a tombstone
    unless history was asked for (SPEC §8)."""
    if include_history:
        return results
    return [r for r in results if r.verification.verdict is not Verdict.HISTORICAL]


def _first_usable(opened: OpenedBranch, ranked: list[Candidate], k: int,
                  include_history: bool, first: Sequence[VerifiedResult] = ()
                  ) -> tuple[list[VerifiedResult], int]:
    """The first ``k`` results of ``ranked`` a search may serve, verified in rank order only as
    far as needed: a result hidden after verification (``_usable``) gives its slot to the next,
    so the results for any k are the first k of the results for a larger one. ``first``
    (a name looked up that was renamed since) leads whatever k is. Also how many were passed
    over as historical."""
    usable: list[VerifiedResult] = list(first)
    hidden = 0
    start = 0
    shown = {today for result in first if (today := result.code_today) is not None}
    # A live chunk by its lines: a tombstone whose code today is those lines is served as it.
    live_at: dict[tuple[str, int, int], Candidate] = {}
    for candidate in ranked:
        record = candidate.record
        if record.is_live:
            live_at.setdefault((record.path, record.start_line, record.end_line), candidate)
    while len(usable) < k and start < len(ranked):
        batch = ranked[start:start + k - len(usable)]
        start += len(batch)
        verified = verify_results(opened, [(c.record, c.score, c.explain()) for c in batch])
        served = _usable(verified, include_history)
        hidden += len(verified) - len(served)
        for result in served:
            serving = _as_live(opened, result, live_at)
            today = serving.code_today
            if today is None or today not in shown:
                usable.append(serving)
            if today is not None:
                shown.add(today)
    return _renumbered(usable, k), hidden


def _as_live(opened: OpenedBranch, result: VerifiedResult,
             live_at: dict[tuple[str, int, int], Candidate]) -> VerifiedResult:
    """A tombstone whose code today a live chunk of the ranking holds (a definition renamed
    in place, once indexed again) served as that live chunk, at the tombstone's place; that
    chunk, and any other result verified to the same lines, is then not served again. The
    live chunk is looked for in the whole ranking, so every k serves the same."""
    today = result.code_today
    live = live_at.get(today) if today is not None and not result.record.is_live else None
    if live is None:
        return result
    found = verify_results(opened, [(live.record, result.score, live.explain())])[0]
    return found if found.code_today == today else result


def uncommitted_summary(changes: list[FileChange], shown: int = 5) -> dict[str, Any]:
    """New files (searched only once committed and indexed), changed ones (verified as they
    are now), deleted ones and moved ones (a rename, or a new path holding a deleted path's
    very blob: found and verified at the new path), counted, the first new paths named."""
    gone = {c.old_blob for c in changes if c.status == "deleted"}
    moved = [c for c in changes if c.status == "renamed" or
             c.status == "added" and c.new_blob in gone]
    moved_blobs = {c.new_blob for c in moved}
    added = [c.new_path for c in changes if c.status == "added" and c.new_path and
             c.new_blob not in gone]
    deleted = sum(c.status == "deleted" and c.old_blob not in moved_blobs for c in changes)
    return {"new_files": len(added), "new_paths": added[:shown],
            "changed_files": sum(c.status == "modified" for c in changes),
            "deleted_files": deleted, "moved_files": len(moved)}


# (repository, indexed commit, head) -> what the index lacks: the same for every query until
# the head or the index moves, so a server works it out once.
_UNINDEXED: LruCache[tuple[str, str, str], dict[str, Any]] = LruCache(256)


def unindexed_summary(repo: GitRepo, indexed: str | None, head: str) -> dict[str, Any] | None:
    """What the head has that the index does not hold yet: its commits since the indexed one,
    new files (not searched until indexed, the first named), changed ones (verified as they
    are now), deleted ones and moved ones (a new path holding a deleted path's very blob: its
    code is found and verified at the new path); None when the index is at the head. A tree
    diff with git's rename detection, as the search follows a moved and edited file too: it
    reads only the blobs of added and deleted files, so its cost grows with the lag, not with
    the repository."""
    if not indexed or indexed == head:
        return None
    key = (str(repo.path), indexed, head)
    found = _UNINDEXED.get(key)
    if found is None:
        try:
            changes = repo.diff(indexed, head)
            commits = repo.commits_between(indexed, head)
        except ObjectNotFound:  # the indexed commit is gone from the clone (gc, force push)
            return None
        found = _UNINDEXED.put(key, {"commits": commits, **uncommitted_summary(changes)})
    return found


def _renumbered(results: list[VerifiedResult], k: int) -> list[VerifiedResult]:
    """The first ``k``, ranked from 1, with scores that never rise down the ranking: the
    structure and per-file steps move chunks past better-scored ones, and a caller that sorts
    by score must get the ranking back (the rerank's own score stays in ``explain``)."""
    kept = results[:k]
    ceiling: float | None = None
    for rank, result in enumerate(kept, start=1):
        result.rank = rank
        if result.score is not None:
            ceiling = result.score = result.score if ceiling is None else min(result.score,
                                                                              ceiling)
    return kept


def _edited_in_worktree(opened: OpenedBranch, results: list[VerifiedResult]
                        ) -> tuple[list[str] | None, list[str] | None]:
    """The served files a working copy has edited since the head, and those it no longer
    holds (deleted or moved away), neither committed (an agent's own edits): their code is
    the head's. None for ``--worktree`` (verified against the disk) and a repository without a
    work tree. One read per file served, never a status walk."""
    repo = opened.repo
    if opened.target.worktree or repo.is_bare:
        return None, None
    paths = dict.fromkeys(today[0] for r in results if (today := r.code_today) is not None)
    held = {path: blob for path in paths if (blob := repo.blob_at(opened.target.head, path))}
    on_disk = {path: repo.worktree_blob(path) for path in held}
    edited = [path for path, blob in held.items() if on_disk[path] not in (None, blob)]
    gone = [path for path in held if on_disk[path] is None]
    return edited or None, gone or None


def _rows_are_lines(result: VerifiedResult) -> bool:
    """Whether the text's rows are the file's lines from the result's first: an outline elides
    its lines and a later part carries its head above them."""
    record = result.record
    return not record.head_lines and not elides_members(record.kind, result.text)


def _mark_declarations(results: list[VerifiedResult], names: list[str],
                       today: Callable[[str], str | None]) -> None:
    """For a look-up, the line declaring the name in a result not named so itself: a module
    block (a constant has no chunk of its own), an interface or an outline (nor has its
    method, an enum's member), a function (nor has a function declared inside it): the compact
    answer shows it, not the chunk's top. An outline's rows are not the file's lines, but the
    ones it keeps are word for word: ``today``'s text of the file says which line it is."""
    for result in results if names else []:
        record = result.record
        if named_by(record.symbol, names):
            continue
        row = declaring_row(result.text, names, members=record.kind in CONTAINER_KINDS,
                            in_function=record.kind in FUNCTION_KINDS)
        if row is None:
            continue
        if _rows_are_lines(result):
            start = result.verification.current_start_line or record.start_line
            result.declared_at = start + row
        elif (code := result.code_today) is not None:
            path, first, last = code
            lines = split_lines(today(path) or "")[first - 1:last]
            result.declared_at = kept_row_line(result.text, row, lines, first,
                                               result.head_lines)
            result.declared_row = row if result.declared_at is not None else None


def _mark_messages(results: list[VerifiedResult], windows: list[str]) -> None:
    """For a pasted error message, the line holding its fixed words in a result holding them:
    a module block holding it in a constant (ky's prefixUrlRenamedErrorMessage, line 49 of 50)
    shows that line in the compact answer, not the imports at its top."""
    for result in results if windows else []:
        row = message_row(result.text, windows) if _rows_are_lines(result) else None
        start = result.verification.current_start_line or result.record.start_line
        result.message_at = None if row is None else start + row


def search(
    request: SearchRequest, repo_arg: str | RepoHandle, *, settings: Settings,
    config: Config | None = None, store: Store | None = None, embedder: Embedder | None = None,
    count: bool = True,
) -> SearchResponse:
    """The ``request.k`` best chunks, each verified, cited and labelled.

    Tombstoned chunks, and chunks whose file is gone at the head, only with
    ``include_history`` (as ``historical``); excluded file kinds only with
    ``include_excluded``; ``kinds`` limits the file kinds searched (default: all but the
    excluded and on-request kinds).
    """
    opened, index, embedder = _opened(request, repo_arg, settings, config, store, embedder)
    # The whole ranking, whatever k: the k served are its first k usable results.
    candidates, timings = hybrid_search(index, embedder, request, k=MAX_K,
                                        lexical=lexical_engine(settings))
    started = time.perf_counter()
    # A name looked up that only tombstones define: deleted (counted, or served with
    # ``--history``) or renamed in place since (served first, under its new name, as before
    # the index ran again, with or without history).
    looked = looked_up_names(request.query)
    past = verify_results(opened, [
        (record, candidates[0].score if candidates else None, {"renamed_definition": 1.0})
        for record in named_tombstones(index, looked, request.kinds)])
    renamed = [r for r in past if r.verification.renamed_to]
    results, hidden = _first_usable(opened, candidates, request.k, request.include_history,
                                    first=renamed)
    _mark_declarations(results, looked, opened.verifier.current_text)
    _mark_messages(results, pasted_message_windows(request.query))
    mark_parts(results, index, opened.verifier.current_text)
    attach_drift(opened.repo, opened.target.head, results, opened.verifier.file_move)
    verify_seconds = time.perf_counter() - started
    edited, gone = _edited_in_worktree(opened, results)
    response = SearchResponse(
        query=request.query, repo=opened.repo_label, target=opened.target,
        index=index_info(index), results=results,
        timings={**timings.to_dict(), "verify_seconds": round(verify_seconds, 6)},
        hidden_historical=hidden,
        deleted_named=0 if request.include_history else
        sum(r.verification.verdict is Verdict.HISTORICAL for r in past),
        uncommitted=uncommitted_summary(opened.verifier.uncommitted())
        if opened.target.worktree else None,
        unindexed=unindexed_summary(opened.repo, index.manifest.commit, opened.target.head),
        edited=edited, gone=gone,
    )
    if count:
        count_verdicts(settings, response.repo, opened.target.branch,
                       [(str(r.verification.verdict), r.record.path) for r in results])
    return response


@dataclass
class FileResult:
    """One file of a file answer: its kind, score and best chunks, each verified and cited;
    the file's verdict is its best chunk's."""

    rank: int
    path: str
    file_kind: str
    score: float
    chunks: list[VerifiedResult]

    def to_dict(self) -> dict[str, Any]:
        best = self.chunks[0]
        return {
            "rank": self.rank,
            "path": self.path,
            "file_kind": self.file_kind,
            "score": round(self.score, 6),
            "verdict": str(best.verification.verdict),
            "citation": best.citation.text(),
            "chunks": [c.to_dict() for c in self.chunks],
        }


@dataclass
class FilesResponse:
    query: str
    repo: str
    target: Target
    index: dict[str, Any]
    files: list[FileResult]
    timings: dict[str, float]
    # The index behind the head: what it does not hold yet (``unindexed_summary``).
    unindexed: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "repo": self.repo,
            "target": self.target.to_dict(),
            "index": self.index,
            "files": [f.to_dict() for f in self.files],
            "unindexed": self.unindexed,
            "timings": self.timings,
        }


def search_files(
    request: SearchRequest, repo_arg: str | RepoHandle, *, settings: Settings,
    config: Config | None = None, store: Store | None = None, embedder: Embedder | None = None,
    count: bool = True,
) -> FilesResponse:
    """The ``request.k`` best files (which file, not which lines), each with its best chunks
    verified and cited; filters as ``search``. A file whose chunks are all hidden (historical
    without ``include_history``) is left out."""
    opened, index, embedder = _opened(request, repo_arg, settings, config, store, embedder)
    k = request.k
    found, timings = file_search(index, embedder, request, k=MAX_K,
                                 lexical=lexical_engine(settings))
    started = time.perf_counter()
    files: list[FileResult] = []
    for candidate in found:
        if len(files) == k:
            break
        verified = verify_results(opened, [(c.record, c.score, c.explain())
                                           for c in candidate.chunks])
        usable = _usable(verified, request.include_history)
        if usable:
            files.append(FileResult(len(files) + 1, candidate.path, candidate.kind,
                                    candidate.score, _renumbered(usable, CHUNKS_PER_FILE)))
    # One pass for every file's chunks: one tree diff per stamp commit, not one per file.
    attach_drift(opened.repo, opened.target.head, [c for f in files for c in f.chunks],
                 opened.verifier.file_move)
    verify_seconds = time.perf_counter() - started
    response = FilesResponse(
        query=request.query, repo=opened.repo_label, target=opened.target,
        index=index_info(index), files=files,
        timings={**timings.to_dict(), "verify_seconds": round(verify_seconds, 6)},
        unindexed=unindexed_summary(opened.repo, index.manifest.commit, opened.target.head),
    )
    if count:
        count_verdicts(settings, response.repo, opened.target.branch,
                       [(str(f.chunks[0].verification.verdict), f.chunks[0].record.path)
                        for f in files])
    return response

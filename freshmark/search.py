"""The use-case layer behind ``search`` and ``verify`` (CLI, HTTP and MCP call these).

``search``: resolve the repository and branch -> open the branch index -> hybrid search ->
verify every result against the branch head (or the work tree) -> results that carry their
stamp, verdict, reason and citation header, and a response that names the index it came from
(collection, indexed commit per layer, build time). ``verify_snippets``: the same verification
for a snippet list (seed 000 §4.8) or freshmark's own JSON results. Both count the verdicts
they give per repository and branch (``VerdictStats``) and in Prometheus when available.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from freshmark.citation import Citation, cite, cite_file
from freshmark.classify import classify
from freshmark.config import Config, load_config
from freshmark.errors import EmbedderMismatch, PermanentError, UnsafePath
from freshmark.gitrepo import GitRepo
from freshmark.repos import RepoHandle, resolve_repo
from freshmark.settings import Settings
from freshmark.snippets import SnippetEntry, check_text, parse_snippets
from freshmark.stamp import EXCLUDED_FILE_KINDS, MANDATORY_FIELDS, ChunkRecord
from freshmark.store import BranchIndex, Store
from freshmark.verdict_stats import VerdictStats
from freshmark.verify import (
    ACTIONS,
    EXCLUSION_REASONS,
    SAFE_VERDICTS,
    Target,
    Verdict,
    Verification,
    Verifier,
    resolve_target,
)

# Verdict given to an input line of ``verify`` that could not be checked at all.
INVALID = "invalid"


# -- opening a branch for one request --------------------------------------------------------------
@dataclass
class OpenedBranch:
    """Everything one request needs: the repository, its target head and a verifier.

    ``index`` is None when the request does not need the branch index (``verify``).
    """

    handle: RepoHandle
    repo: GitRepo
    target: Target
    verifier: Verifier
    index: BranchIndex | None = None

    @property
    def repo_label(self) -> str:
        """The repository name under which the index (and the statistics) know it."""
        return self.index.manifest.repo if self.index is not None else self.handle.name


def open_branch(repo_arg: str | RepoHandle, *, settings: Settings, config: Config,
                branch: str | None, worktree: bool, store: Store | None,
                need_index: bool) -> OpenedBranch:
    """Resolve ``repo_arg`` (path or id, or a handle a network edge already resolved) and
    ``branch`` (default: checked out) to a target.

    Raises NotIndexed for a repository or branch never indexed (when ``need_index``),
    RepositoryGone when the repository moved or was deleted since indexing, BranchNotFound
    for a branch git does not know.
    """
    if isinstance(repo_arg, RepoHandle):
        handle = repo_arg
        store = store if store is not None or not need_index else store_for(settings)
    else:
        if store is None and (need_index or not Path(repo_arg).expanduser().exists()):
            store = store_for(settings)
        handle = resolve_repo(repo_arg, settings, config, store)
    repo = handle.open()
    target = resolve_target(repo, branch, worktree)
    index = store.require_branch(handle.key, target.branch, handle.name) \
        if need_index and store is not None else None
    return OpenedBranch(handle, repo, target, Verifier(repo, target), index)


_STORES: dict[tuple[str | None, str], Store] = {}
_STORES_LOCK = threading.Lock()


def store_for(settings: Settings) -> Store:
    """This process's store for ``settings``: a server connection is opened once, not per
    request (each open costs a heartbeat round trip)."""
    key = (settings.chroma_url, str(settings.chroma_path))
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = Store.open(settings)
            _STORES[key] = store
    return store


def index_info(index: BranchIndex) -> dict[str, Any]:
    """Which index a response came from: collection, commit and build time, per layer too."""
    manifest = index.manifest
    return {
        "collection": index.name,
        "repo": manifest.repo,
        "branch": manifest.branch,
        "commit": manifest.commit,
        "indexed_at": manifest.indexed_at,
        "layers": {name: dict(stamp) for name, stamp in sorted(manifest.layers.items())},
        "embedder": manifest.embedder,
        "generation": manifest.generation,
    }


# -- embedders are loaded once per process ---------------------------------------------------------
_EMBEDDERS: dict[tuple[str, str], Any] = {}
_EMBEDDERS_LOCK = threading.Lock()


def embedder_for(settings: Settings, index: BranchIndex) -> Any:
    """The process's embedder for ``settings``; refuses one the index was not built with."""
    from freshmark.embedding import LazyEmbedder

    key = (settings.embedder, str(settings.cache_dir))
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            # Loaded at the first query that needs a vector (BM25 alone needs none).
            embedder = LazyEmbedder(settings.embedder, settings.cache_dir,
                                    threads=settings.embed_threads)
            _EMBEDDERS[key] = embedder
    if embedder.id != index.manifest.embedder:
        raise EmbedderMismatch(
            f"{index.name} was indexed with {index.manifest.embedder!r}, but this process embeds "
            f"queries with {embedder.id!r}; set FRESHMARK_EMBEDDER to match the index"
        )
    return embedder


# -- statistics ------------------------------------------------------------------------------------
def count_verdicts(settings: Settings, repo: str, branch: str, verdicts: list[str]) -> None:
    """Add verdicts to the on-disk totals and to the Prometheus counter (if it is there)."""
    counts = Counter(verdicts)
    VerdictStats.open(settings).add_later(repo, branch, counts)  # batched: see verdict_stats
    try:
        from freshmark.metrics import VERIFICATION_VERDICTS_TOTAL
    except ImportError:
        return
    for verdict, number in counts.items():
        VERIFICATION_VERDICTS_TOTAL.labels(verdict=verdict).inc(number)


# -- search ----------------------------------------------------------------------------------------
@dataclass
class VerifiedResult:
    """One search result: the stamped chunk, its verdict and citation, and its ranking."""

    rank: int
    record: ChunkRecord
    verification: Verification
    citation: Citation
    score: float | None = None
    explain: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """What to put under the citation: today's lines for ``changed``, else the chunk."""
        if self.verification.current_text is not None:
            return self.verification.current_text
        return self.record.text

    def to_dict(self) -> dict[str, Any]:
        """SPEC §1 stamp fields under their names, plus verdict, reason and citation."""
        v = self.verification
        return {
            **self.record.stamp(),
            "verdict": str(v.verdict),
            "seed_word": v.seed_word,
            "reason": v.reason,
            "action": ACTIONS[v.verdict],
            "citation": self.citation.text(),
            "current_start_line": v.current_start_line,
            "current_end_line": v.current_end_line,
            "text": self.text,
            "rank": self.rank,
            "score": None if self.score is None else round(self.score, 6),
            "explain": self.explain,
        }


@dataclass
class SearchResponse:
    query: str
    repo: str
    target: Target
    index: dict[str, Any]
    results: list[VerifiedResult]
    timings: dict[str, float]

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
            "timings": self.timings,
        }


RankedRecord = tuple[ChunkRecord, float | None, dict[str, Any]]


def verify_results(opened: OpenedBranch, records: list[RankedRecord]) -> list[VerifiedResult]:
    """Verify ranked records and attach their citation headers."""
    verifier = opened.verifier
    out: list[VerifiedResult] = []
    for rank, (record, score, explain) in enumerate(records, start=1):
        verification = verifier.verify(record)
        head_date = verifier.head_date() if verification.verdict is Verdict.CHANGED else None
        citation = cite(record, verification, opened.target, head_date)
        out.append(VerifiedResult(rank, record, verification, citation, score, explain))
    return out


def _searched(
    query: str, repo_arg: str | RepoHandle, *, k: int, kinds: list[str] | str | None,
    include_excluded: bool, settings: Settings, config: Config | None, branch: str | None,
    worktree: bool, store: Store | None, embedder: Any | None,
) -> tuple[str, int, OpenedBranch, Any]:
    """What both searches check and open: ``k``, the kinds and the query are refused before
    anything is opened; then the branch index and the embedder it was built with."""
    from freshmark.retrieval import resolve_kinds, validate_k, validate_query

    k = validate_k(k)
    resolve_kinds(kinds, include_excluded)
    text = validate_query(query)
    config = config if config is not None else load_config(settings.config_path)
    opened = open_branch(repo_arg, settings=settings, config=config, branch=branch,
                         worktree=worktree, store=store, need_index=True)
    assert opened.index is not None
    embedder = embedder if embedder is not None else embedder_for(settings, opened.index)
    return text, k, opened, embedder


def _usable(results: list[VerifiedResult], include_history: bool) -> list[VerifiedResult]:
    """Results a default search may serve: a chunk whose file was deleted or renamed since it
    was indexed (``historical`` at query time, not yet tombstoned) is hidden like a tombstone
    unless history was asked for (SPEC §8)."""
    if include_history:
        return results
    return [r for r in results if r.verification.verdict is not Verdict.HISTORICAL]


def _renumbered(results: list[VerifiedResult], k: int) -> list[VerifiedResult]:
    kept = results[:k]
    for rank, result in enumerate(kept, start=1):
        result.rank = rank
    return kept


def search(
    query: str,
    repo_arg: str | RepoHandle,
    *,
    settings: Settings,
    config: Config | None = None,
    branch: str | None = None,
    k: int = 5,
    worktree: bool = False,
    include_history: bool = False,
    include_excluded: bool = False,
    kinds: list[str] | str | None = None,
    channels: str = "hybrid",
    store: Store | None = None,
    embedder: Any | None = None,
    count: bool = True,
) -> SearchResponse:
    """The ``k`` best chunks for ``query``, each verified, cited and labelled.

    Tombstoned chunks, and chunks whose file is gone at the head, only with
    ``include_history`` (as ``historical``); excluded file kinds only with
    ``include_excluded``; ``kinds`` limits the file kinds searched (default: all but the
    excluded and on-request kinds). Raises BadInput for an empty, binary or over-long query, a
    bad ``k`` or an unknown kind before anything is opened.
    """
    from freshmark.retrieval import MAX_K, hybrid_search

    text, k, opened, embedder = _searched(
        query, repo_arg, k=k, kinds=kinds, include_excluded=include_excluded,
        settings=settings, config=config, branch=branch, worktree=worktree, store=store,
        embedder=embedder)
    assert opened.index is not None
    candidates, timings = hybrid_search(
        opened.index, embedder, text, min(2 * k, MAX_K), include_history=include_history,
        include_excluded=include_excluded, kinds=kinds, channels=channels,
        cache_dir=settings.cache_dir,
    )
    started = time.perf_counter()
    verified = verify_results(opened, [(c.record, c.score, c.explain()) for c in candidates])
    results = _renumbered(_usable(verified, include_history), k)
    verify_seconds = time.perf_counter() - started
    response = SearchResponse(
        query=text, repo=opened.repo_label, target=opened.target, index=index_info(opened.index),
        results=results,
        timings={**timings.to_dict(), "verify_seconds": round(verify_seconds, 6)},
    )
    if count:
        count_verdicts(settings, response.repo, opened.target.branch,
                       [str(r.verification.verdict) for r in results])
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "repo": self.repo,
            "target": self.target.to_dict(),
            "index": self.index,
            "files": [f.to_dict() for f in self.files],
            "timings": self.timings,
        }


def search_files(
    query: str,
    repo_arg: str | RepoHandle,
    *,
    settings: Settings,
    config: Config | None = None,
    branch: str | None = None,
    k: int = 5,
    worktree: bool = False,
    include_history: bool = False,
    include_excluded: bool = False,
    kinds: list[str] | str | None = None,
    channels: str = "hybrid",
    chunks_per_file: int = 3,
    store: Store | None = None,
    embedder: Any | None = None,
    count: bool = True,
) -> FilesResponse:
    """The ``k`` best files for ``query`` (which file, not which lines), each with its best
    chunks verified and cited; filters as ``search``. A file whose chunks are all hidden
    (historical without ``include_history``) is left out."""
    from freshmark.retrieval import MAX_K, file_search

    text, k, opened, embedder = _searched(
        query, repo_arg, k=k, kinds=kinds, include_excluded=include_excluded,
        settings=settings, config=config, branch=branch, worktree=worktree, store=store,
        embedder=embedder)
    assert opened.index is not None
    found, timings = file_search(
        opened.index, embedder, text, min(k + 5, MAX_K), include_history=include_history,
        include_excluded=include_excluded, kinds=kinds, channels=channels,
        chunks_per_file=chunks_per_file, cache_dir=settings.cache_dir,
    )
    started = time.perf_counter()
    files: list[FileResult] = []
    for candidate in found:
        verified = verify_results(opened, [(c.record, c.score, c.explain())
                                           for c in candidate.chunks])
        usable = _usable(verified, include_history)
        if usable and len(files) < k:
            files.append(FileResult(len(files) + 1, candidate.path, candidate.kind,
                                    candidate.score, _renumbered(usable, chunks_per_file)))
    verify_seconds = time.perf_counter() - started
    response = FilesResponse(
        query=text, repo=opened.repo_label, target=opened.target,
        index=index_info(opened.index), files=files,
        timings={**timings.to_dict(), "verify_seconds": round(verify_seconds, 6)},
    )
    if count:
        count_verdicts(settings, response.repo, opened.target.branch,
                       [str(f.chunks[0].verification.verdict) for f in files])
    return response


# -- verify ----------------------------------------------------------------------------------------
@dataclass
class CheckedLine:
    """The verdict on one input line of ``verify`` (``verdict`` is ``invalid`` when the line
    could not be checked: malformed, or a path that leaves the repository)."""

    line: int
    path: str
    verdict: str
    reason: str
    source_format: str
    seed_word: str | None = None
    symbol: str | None = None
    citation: str | None = None
    current_start_line: int | None = None
    current_end_line: int | None = None

    @property
    def safe(self) -> bool:
        return self.verdict in {str(v) for v in SAFE_VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class VerifyReport:
    repo: str
    target: Target
    lines: list[CheckedLine]

    @property
    def all_safe(self) -> bool:
        """True only if every line may be used as is (current or older but identical)."""
        return all(line.safe for line in self.lines)

    def verdict_counts(self) -> dict[str, int]:
        return dict(Counter(line.verdict for line in self.lines))

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "target": self.target.to_dict(),
            "lines": [line.to_dict() for line in self.lines],
            "verdicts": self.verdict_counts(),
            "safe": self.all_safe,
        }


_RECORD_FIELDS = {f.name for f in fields(ChunkRecord)} - {"id", "text", "imports", "references"}


def record_from_stamp(stamp: dict[str, Any]) -> ChunkRecord:
    """A ChunkRecord from a result object (``search --json``); absent fields stay empty so the
    verifier calls the result ``unverifiable`` rather than guessing."""
    values = {name: stamp[name] for name in _RECORD_FIELDS if stamp.get(name) is not None}
    for name in MANDATORY_FIELDS:
        values.setdefault(name, 0 if name in ("start_line", "end_line") else "")
    return ChunkRecord(text=str(stamp.get("text") or ""), **values)


def _file_kind(verifier: Verifier, path: str, config: Config) -> str:
    data = verifier.current_bytes(path) or b""
    attributes = verifier.repo.attributes(verifier.target.head, path)
    return classify(path, data, config.rules, attributes).file_kind


def _check_tsv(entry: SnippetEntry, opened: OpenedBranch, config: Config) -> CheckedLine:
    verifier = opened.verifier
    verification = verifier.verify_file_hash(entry.path, entry.hash_prefix)
    if verification.verdict in (Verdict.CURRENT, Verdict.CHANGED):
        kind = _file_kind(verifier, entry.path, config)
        if kind in EXCLUDED_FILE_KINDS:
            verification = Verification(Verdict.EXCLUDED, EXCLUSION_REASONS[kind])
    citation = cite_file(entry.path, entry.hash_prefix, verification, opened.target)
    return CheckedLine(entry.line, entry.path, str(verification.verdict), verification.reason,
                       "tsv", verification.seed_word, citation=citation.text())


def _check_json(entry: SnippetEntry, opened: OpenedBranch) -> CheckedLine:
    assert entry.stamp is not None
    record = record_from_stamp(entry.stamp)
    result = verify_results(opened, [(record, None, {})])[0]
    v = result.verification
    return CheckedLine(entry.line, entry.path, str(v.verdict), v.reason, "json", v.seed_word,
                       symbol=record.symbol or None, citation=result.citation.text(),
                       current_start_line=v.current_start_line,
                       current_end_line=v.current_end_line)


def check_entry(entry: SnippetEntry, opened: OpenedBranch, config: Config) -> CheckedLine:
    """Verify one parsed input line; a line that cannot be checked is ``invalid``, not fatal."""
    if entry.error is not None:
        return CheckedLine(entry.line, entry.path, INVALID, entry.error, entry.source_format)
    try:
        if entry.stamp is not None:
            return _check_json(entry, opened)
        return _check_tsv(entry, opened, config)
    except UnsafePath as exc:
        return CheckedLine(entry.line, entry.path, INVALID, f"refused: {exc}", entry.source_format)
    except PermanentError as exc:  # e.g. an object missing from a damaged repository
        return CheckedLine(entry.line, entry.path, INVALID, str(exc), entry.source_format)


def verify_snippets(
    text: str,
    repo_arg: str | RepoHandle,
    *,
    settings: Settings,
    config: Config | None = None,
    branch: str | None = None,
    worktree: bool = False,
    store: Store | None = None,
    count: bool = True,
) -> VerifyReport:
    """Verify every line of a snippet list or of JSON results; bad lines are reported, not fatal.

    Raises BadInput when there is nothing to verify; repository and branch errors as ``search``.
    The branch need not be indexed: verification reads git only.
    """
    entries = parse_snippets(check_text(text))
    config = config if config is not None else load_config(settings.config_path)
    opened = open_branch(repo_arg, settings=settings, config=config, branch=branch,
                         worktree=worktree, store=store, need_index=False)
    lines = [check_entry(entry, opened, config) for entry in entries]
    report = VerifyReport(opened.repo_label, opened.target, lines)
    if count:
        count_verdicts(settings, report.repo, opened.target.branch,
                       [line.verdict for line in lines if line.verdict != INVALID])
    return report

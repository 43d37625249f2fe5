"""``verify``: a snippet list (seed 000 §4.8) or JSON results checked against the head."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields, replace
from typing import Any

from freshmark.adapters.store.chroma import Store
from freshmark.core.citation import cite, cite_file
from freshmark.core.classify import classify
from freshmark.core.config import Config, load_config
from freshmark.core.errors import BranchNotFound, PermanentError, UnsafePath
from freshmark.core.kinds import EXCLUDED_FILE_KINDS
from freshmark.core.request import validate_branch
from freshmark.core.settings import Settings
from freshmark.core.snippets import SnippetEntry
from freshmark.core.stamp import MANDATORY_FIELDS, ChunkRecord
from freshmark.core.verdicts import (
    EXCLUSION_REASONS,
    SAFE_VERDICTS,
    Target,
    Verdict,
    Verification,
    short,
)
from freshmark.services.listed_files import verify_file_hash
from freshmark.services.open_branch import OpenedBranch, count_verdicts, open_branch
from freshmark.services.repos import RepoHandle
from freshmark.services.retrieval.results import verify_results
from freshmark.services.verifier import Verifier

# Verdict given to an input line of ``verify`` that could not be checked at all.
INVALID = "invalid"


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
    moved_to: str | None = None

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
    # A changed result's text is its lines of that day, not the indexed ones: left out, the
    # code as indexed is read from its blob. A chunk's own text ends without a newline (the
    # newline would read as a later part's carried head).
    text = "" if stamp.get("verdict") == "changed" else str(stamp.get("text") or "")
    return ChunkRecord(text=text.removesuffix("\n"), **values)


def _exclusion(verifier: Verifier, path: str, config: Config) -> str | None:
    """Why the file at ``path`` is kept out of context today, None when it is not."""
    data = verifier.current_bytes(path) or b""
    attributes = verifier.repo.attributes(verifier.target.head, path)
    found = classify(path, data, config.rules, attributes)
    if found.file_kind not in EXCLUDED_FILE_KINDS:
        return None
    return EXCLUSION_REASONS.get(found.skip_reason or "") or EXCLUSION_REASONS[found.file_kind]


def _check_tsv(entry: SnippetEntry, opened: OpenedBranch, config: Config) -> CheckedLine:
    verifier = opened.verifier
    verification = verify_file_hash(verifier, entry.path, entry.hash_prefix)
    now_at = verification.moved_to or entry.path
    if verification.verdict in (Verdict.CURRENT, Verdict.OLDER_IDENTICAL, Verdict.CHANGED):
        why = _exclusion(verifier, now_at, config)
        if why is not None:
            verification = Verification(Verdict.EXCLUDED, why)
    citation = cite_file(now_at, entry.hash_prefix, verification, opened.target)
    return CheckedLine(entry.line, entry.path, str(verification.verdict), verification.reason,
                       "tsv", verification.seed_word, citation=citation.text(),
                       moved_to=verification.moved_to)


def _other_history(record: ChunkRecord, opened: OpenedBranch) -> bool:
    """The record was indexed on another branch at a commit the target's history lacks."""
    if not record.branch or record.branch == opened.target.branch or not record.commit:
        return False
    try:
        return not opened.repo.is_ancestor(record.commit, opened.target.head)
    except PermanentError:  # the commit is gone from this repository: no history to compare
        return True


def _check_json(entry: SnippetEntry, opened: OpenedBranch) -> CheckedLine:
    assert entry.stamp is not None
    record = record_from_stamp(entry.stamp)
    result = verify_results(opened, [(record, None, {})])[0]
    v = result.verification
    if v.verdict is Verdict.HISTORICAL and _other_history(record, opened):
        # "Deleted since indexing" is false of code the target's history never had.
        v = Verification(Verdict.UNVERIFIABLE,
                         f"indexed on {record.branch} at {short(record.commit)}, which "
                         f"{opened.target.label} does not contain; verify it against "
                         f"{record.branch}")
        result.verification = v
        result.citation = replace(cite(record, v, opened.target),
                                  version=result.citation.version)
    return CheckedLine(entry.line, entry.path, str(v.verdict), v.reason, "json", v.seed_word,
                       symbol=record.symbol or None, citation=result.citation.text(),
                       current_start_line=v.current_start_line,
                       current_end_line=v.current_end_line, moved_to=v.moved_to)


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


def saved_branch(entries: list[SnippetEntry]) -> str | None:
    """The one branch saved results were searched on, None when they name none or several:
    results are verified against their own branch unless another is asked for."""
    branches = {str(e.stamp.get("branch") or "") for e in entries if e.stamp is not None}
    return branches.pop() if len(branches) == 1 and "" not in branches else None


def verify_entries(
    entries: list[SnippetEntry],
    repo_arg: str | RepoHandle,
    *,
    settings: Settings,
    config: Config | None = None,
    branch: str | None = None,
    worktree: bool = False,
    store: Store | None = None,
    count: bool = True,
) -> VerifyReport:
    """Verify every parsed line of a snippet list or of JSON results (``parse_snippets``);
    bad lines are reported, not fatal. Repository and branch errors as ``search``. The
    branch need not be indexed: verification reads git only."""
    config = config if config is not None else load_config(settings.config_path)
    branch = validate_branch(branch)
    saved = saved_branch(entries) if branch is None and not worktree else None
    try:
        opened = open_branch(repo_arg, settings=settings, config=config,
                             branch=branch or saved, worktree=worktree, store=store,
                             need_index=False)
    except BranchNotFound:
        if saved is None:
            raise
        # The results' branch is gone (merged and deleted): the checked-out one it is.
        opened = open_branch(repo_arg, settings=settings, config=config, branch=None,
                             worktree=worktree, store=store, need_index=False)
    lines = [check_entry(entry, opened, config) for entry in entries]
    report = VerifyReport(opened.repo_label, opened.target, lines)
    if count:
        count_verdicts(settings, report.repo, opened.target.branch,
                       [(line.verdict, line.path) for line in lines if line.verdict != INVALID])
    return report

"""Verification at use time (SPEC §2): is a stamped chunk still true where the caller works?

Checks run cheapest first and stop at the first answer:

1. metadata: a mandatory stamp field missing -> ``unverifiable`` (a clue, not evidence);
2. file kind: generated, backup, fixture, vendored -> ``excluded``, with why;
3. tombstone: ``historical`` (deleted in X, renamed to Y in X, symbol gone in X), but module
   code whose lines are still in its file goes on (its positional name is no identity), and
   so does a function or method renamed in place (the verdict it had before re-indexing);
4. version: stamp ``commit`` equal to the target head -> ``current`` with no git or file read
   at all (``Verifier.git_reads`` stays unchanged, which the tests and the benchmark check);
   otherwise one tree lookup of ``path`` at the head against the stamped ``blob_sha``:
   equal -> ``older_identical``; absent -> location (step 7);
5. content: against the work tree, sha256 of the bytes on disk against ``content_sha256``;
6. symbol: the file changed, so look the symbol up in today's file (``core/locate.py``: all
   definitions of the name, definitions at any depth, module code by its lines rather than
   its positional name): found -> ``changed`` with its current lines (re-read, never the
   cached text); a function or method whose name is gone but whose code is there under a
   new one (``renamed_in_place``) -> ``changed`` with ``renamed_to``; gone, but in another
   file of the diff since the stamp with at least half of its lines (a function moved
   between two modules) -> ``changed`` with ``moved_to``; gone -> ``historical``;
7. location (SPEC §10), only for a path absent at the head: the diff from the stamp's commit
   is followed (``services/moves.py``): the same blob elsewhere -> ``older_identical`` with
   ``moved_to``; a moved and edited file, or the symbol found in another file of the diff
   with at least half of its lines -> ``changed`` with ``moved_to`` and its current lines;
   nothing found -> ``historical``.

A ``Verifier`` holds one repository and one target (a branch head or the checked-out work
tree) and caches per path, so verifying ten results of one file reads it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from freshmark.adapters.git.repo import FileGone, GitRepo
from freshmark.core.chunking import FileSymbols, file_symbols, line_count, line_slice
from freshmark.core.classify import decode_text
from freshmark.core.config import DEFAULT_MAX_FILE_BYTES
from freshmark.core.errors import PermanentError, UnsafePath
from freshmark.core.locate import (
    KEPT_SHARE,
    RENAMABLE_KINDS,
    Renamed,
    as_indexed,
    broken_since,
    gone_from,
    is_module_code,
    lines_found,
    lines_kept,
    locate,
    renamed_in_place,
    signature_at,
)
from freshmark.core.stamp import MANDATORY_FIELDS, TOMBSTONED, ChunkRecord
from freshmark.core.tree import FileChange, safe_relpath
from freshmark.core.verdicts import (
    EXCLUSION_REASONS,
    Target,
    Verdict,
    Verification,
    short,
)
from freshmark.services.moves import Move, MoveFinder

# Commits walked from a tombstoned chunk's stamp to name the one that removed it.
REMOVAL_SEARCH_COMMITS = 500
WINDOW_KIND = "window"  # a line window of a file freshmark cannot parse (SPEC §5 fallback)
_LINE_FIELDS = ("start_line", "end_line")


class Verifier:
    """Verifies stamped chunks of one repository against one target, caching per path.

    ``git_reads`` counts every read of the object database or the work tree (tree lookups,
    blob reads, work-tree files, one ``git status`` for work-tree mode).
    """

    def __init__(self, repo: GitRepo, target: Target,
                 max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self.repo = repo
        self.target = target
        self.git_reads = 0
        self._blob_at_head: dict[str, str | None] = {}
        self._bytes: dict[str, bytes | None] = {}
        self._dirty: set[str] | None = None
        self._uncommitted: list[FileChange] | None = None
        self._worktree_moves: dict[str, str] = {}
        self._head_date: str | None = None
        self._commit_dates: dict[str, str | None] = {}
        self._symbols: dict[str, FileSymbols] = {}
        self._indexed: dict[str, FileSymbols | None] = {}
        self._moves = MoveFinder(repo, target.head, max_file_bytes)

    # -- reads (each counted once per path) ------------------------------------------------------
    def blob_at_head(self, path: str) -> str | None:
        if path not in self._blob_at_head:
            self.git_reads += 1
            self._blob_at_head[path] = self.repo.blob_at(self.target.head, path)
        return self._blob_at_head[path]

    def current_bytes(self, path: str) -> bytes | None:
        """Today's bytes of ``path`` (head blob, or the work-tree file); None if absent.

        Raises UnsafePath for paths that leave the repository (``..``, absolute, symlinks out).
        """
        clean = safe_relpath(path)
        if clean not in self._bytes:
            self._bytes[clean] = self._read_worktree(clean) if self.target.worktree \
                else self._read_head(clean)
        return self._bytes[clean]

    def current_text(self, path: str) -> str | None:
        data = self.current_bytes(path)
        return decode_text(data) if data is not None else None

    def _read_head(self, path: str) -> bytes | None:
        blob = self.blob_at_head(path)
        if blob is None:
            return None
        self.git_reads += 1
        return self.repo.read_blob(blob)

    def _read_worktree(self, path: str) -> bytes | None:
        self.git_reads += 1
        try:
            return self.repo.read_worktree_file(path)
        except FileGone:
            return None

    def is_dirty(self, path: str) -> bool:
        """Uncommitted edit of ``path`` in the work tree (one ``git status`` per verifier)."""
        if self._dirty is None:
            changes = self.uncommitted()
            self._dirty = {p for c in changes for p in (c.old_path, c.new_path) if p}
            self._worktree_moves = {c.old_path: c.new_path for c in changes
                                    if c.status == "renamed" and c.old_path and c.new_path}
        return path in self._dirty

    def worktree_move(self, path: str) -> str | None:
        """Where an uncommitted ``git mv`` took ``path``; None when none did."""
        self.is_dirty(path)  # the work tree's changes, read once
        return self._worktree_moves.get(path)

    def read_uncommitted(self, verification: Verification, path: str) -> bool:
        """A changed result's lines were read from an uncommitted edit of ``path`` (its path
        today): a work-tree target reads the head's lines for a file it has not edited."""
        return self.target.worktree and verification.verdict is Verdict.CHANGED and \
            self.is_dirty(path)

    def uncommitted(self) -> list[FileChange]:
        """The work tree's changes since its last commit (staged, unstaged, untracked), read
        once: what an index of commits cannot hold yet."""
        if self._uncommitted is None:
            self.git_reads += 1
            self._uncommitted = self.repo.worktree_changes()
        return self._uncommitted

    def head_date(self) -> str:
        """Committer date (UTC, YYYY-MM-DD) of the target head."""
        if self._head_date is None:
            self.git_reads += 1
            self._head_date = self.repo.commit_time(self.target.head).date().isoformat()
        return self._head_date

    def commit_date(self, sha: str) -> str | None:
        """Committer date (UTC, YYYY-MM-DD) of ``sha``, the date a citation's version line
        gives; None for a commit this repository does not hold (rewritten away, pasted)."""
        if not sha:
            return None
        if sha not in self._commit_dates:
            self.git_reads += 1
            try:
                self._commit_dates[sha] = self.repo.commit_time(sha).date().isoformat()
            except PermanentError:
                self._commit_dates[sha] = None
        return self._commit_dates[sha]

    # -- verification ----------------------------------------------------------------------------
    def verify(self, record: ChunkRecord) -> Verification:
        """The verdict on one stamped chunk (see the module docstring for the order)."""
        early = self._metadata_kind(record)
        if early is not None:
            return early
        try:
            if record.status == TOMBSTONED:
                return self._tombstoned(record)
            return self._version_content_symbol(record)
        except UnsafePath as exc:  # that file's result is labelled; the others are answered
            return Verification(Verdict.UNVERIFIABLE, f"refused: {exc}")

    def _metadata_kind(self, record: ChunkRecord) -> Verification | None:
        # getattr, not record.stamp(): this runs per result on the fast path. from_metadata
        # fills absent line numbers with 0, which is missing too.
        missing = [n for n in MANDATORY_FIELDS if getattr(record, n) in (None, "")]
        missing += [n for n in _LINE_FIELDS if getattr(record, n) == 0]
        if missing:
            return Verification(Verdict.UNVERIFIABLE,
                                f"no version metadata: missing {', '.join(missing)}")
        if record.start_line < 1 or record.end_line < record.start_line:
            return Verification(Verdict.UNVERIFIABLE,
                                f"line range L{record.start_line}-L{record.end_line} is not valid")
        if record.is_excluded_kind:
            why = EXCLUSION_REASONS.get(record.file_kind, record.file_kind)
            return Verification(Verdict.EXCLUDED, why)
        return None

    def _tombstoned(self, record: ChunkRecord) -> Verification:
        """``historical``; but code the indexer tombstoned for a name that no longer says where
        it is, while its file still holds it, gets the verdict it had before that index run
        (one change, one answer, whenever the index ran): module code tombstoned for a
        positional name that moved on (an index run before blocks were paired by their
        lines) is ``changed`` where its lines are today, found by them alone, when that place
        is no longer its name's; a function or method renamed in place (``renamed_in_place``,
        in its own file only) is ``changed`` under its new name, at its lines today."""
        if record.kind != WINDOW_KIND and not record.successor and (
                is_module_code(record.symbol) or record.kind in RENAMABLE_KINDS) and \
                self.current_bytes(record.path) is not None:
            alive = self._version_content_symbol(record, nearest=False)
            if alive.renamed_to:
                return alive
            if alive.verdict is Verdict.CHANGED and is_module_code(record.symbol):
                named = self._symbols[record.path].first_spans().get(record.symbol)
                if not named or not named[0] <= (alive.current_start_line or 0) <= named[1]:
                    return alive
        return Verification(Verdict.HISTORICAL, self._tombstone_reason(record))

    def _tombstone_reason(self, record: ChunkRecord) -> str:
        if not record.tombstoned_in:
            return "tombstoned by the indexer"
        try:
            self.git_reads += 1
            still_there = self.repo.blob_at(record.tombstoned_in, record.path) is not None
            removed_in = self._removed_in(record)
        except PermanentError:  # the tombstone commit was rewritten away (force push)
            return f"tombstoned in {short(record.tombstoned_in)}"
        # The index run that tombstoned it may be many commits after the one that removed it.
        when = f"in {short(removed_in)}" if removed_in else \
            f"between {short(record.commit)} and {short(record.tombstoned_in)}"
        if record.successor:
            return f"file renamed to {record.successor} {when}" + self._now_at(record)
        if still_there:
            return f"symbol {record.symbol} removed from {record.path} {when}"
        return f"module deleted {when}"

    def _removed_in(self, record: ChunkRecord) -> str | None:
        """The first commit after the stamp's whose file no longer holds ``record``'s
        definition (deleted, renamed, or without it), among those that changed the path in
        the first ``REMOVAL_SEARCH_COMMITS`` commits up to the tombstone; None if not found."""
        if not record.commit or not record.tombstoned_in:
            return None
        touching = list(self.repo.commits_touching(record.path, record.commit,
                                                   record.tombstoned_in,
                                                   REMOVAL_SEARCH_COMMITS))
        for commit in reversed(touching):
            self.git_reads += 1
            blob_sha = self.repo.blob_at(commit, record.path)
            text = self._moves.text(blob_sha) if blob_sha else None
            if text is None or record.kind == WINDOW_KIND or locate(
                    record, file_symbols(record.path, text),
                    lambda: self._indexed_symbols(record), nearest=False) is None:
                return commit
        return None

    def _now_at(self, record: ChunkRecord) -> str:
        """Where a renamed file's symbol is today (SPEC §2: if it moved, say where)."""
        try:
            text = self.current_text(record.successor or "")
        except PermanentError:  # an unsafe successor path, or a damaged repository
            return ""
        span = self._locate(record, record.successor or "", text, nearest=False) if text else None
        return f"; {record.symbol} is now at {record.successor}#L{span[0]}-L{span[1]}" \
            if span else ""

    def _version_content_symbol(self, record: ChunkRecord, nearest: bool = True) -> Verification:
        target = self.target
        at_head = record.commit == target.head
        if at_head and not target.worktree:
            return Verification(Verdict.CURRENT, f"indexed at the head of {target.label}")
        if target.worktree:
            return self._against_worktree(record, at_head, nearest)
        blob = self.blob_at_head(record.path)
        if blob is None:
            return self._absent(record)
        if blob == record.blob_sha:
            return Verification(
                Verdict.OLDER_IDENTICAL,
                f"indexed at {short(record.commit)}, file unchanged since (blob matches at "
                f"{target.label})",
            )
        return self._symbol_step(record, f"file changed since {short(record.commit)}", nearest)

    def _against_worktree(self, record: ChunkRecord, at_head: bool, nearest: bool) -> Verification:
        target = self.target
        path = safe_relpath(record.path)
        if not self.is_dirty(path):
            if at_head:
                return Verification(Verdict.CURRENT, f"indexed at {target.label}, no local edits")
            blob = self.blob_at_head(path)
            if blob is None:
                return self._absent(record)
            if blob == record.blob_sha:
                return Verification(Verdict.OLDER_IDENTICAL,
                                    f"indexed at {short(record.commit)}, file unchanged since")
            return self._symbol_step(record, f"file changed since {short(record.commit)}",
                                     nearest)
        data = self.current_bytes(path)
        if data is None and (new_path := self.worktree_move(path)) is not None:
            verdict = Verdict.CURRENT if at_head else Verdict.OLDER_IDENTICAL
            return Verification(verdict, f"moved to {new_path} in the work tree (uncommitted), "
                                         "content unchanged",
                                current_start_line=record.start_line,
                                current_end_line=record.end_line, moved_to=new_path)
        if data is None and (move := self._moves.worktree_move(
                path, record.blob_sha, self.uncommitted(), self.current_text)) is not None:
            found = self._changed_at(record, move, f"moved to {move.new_path} and edited in "
                                                   "the work tree (uncommitted)")
            if found is not None:
                return found
        if data is None:
            return Verification(Verdict.HISTORICAL,
                                "file deleted in the work tree (uncommitted) since indexing")
        if hashlib.sha256(data).hexdigest() == record.content_sha256:
            verdict = Verdict.CURRENT if at_head else Verdict.OLDER_IDENTICAL
            return Verification(verdict, "hash matches the file on disk")
        return self._symbol_step(record, "file edited in the work tree since indexing", nearest)

    def _absent(self, record: ChunkRecord) -> Verification:
        return self._following(self._follow_move, record) or Verification(
            Verdict.HISTORICAL,
            f"file absent at {self.target.label}: deleted or renamed since indexing at "
            f"{short(record.commit)} (live in the index when this result was read; an index "
            "run tombstones it)",
        )

    def _follow_move(self, record: ChunkRecord) -> Verification | None:
        """The verdict at the path ``record``'s file or symbol moved to, if it moved."""
        since = f"since indexing at {short(record.commit)}"
        move = self._moves.file_move(record.commit, record.path, record.blob_sha)
        if move is not None and move.pure and not (
                self.target.worktree and self.is_dirty(move.new_path)):
            return Verification(
                Verdict.OLDER_IDENTICAL,
                f"moved from {record.path} to {move.new_path} {since}, file unchanged "
                f"(blob matches at {self.target.label})",
                current_start_line=record.start_line, current_end_line=record.end_line,
                moved_to=move.new_path)
        if move is not None:
            found = self._changed_at(record, move, f"moved from {record.path} to "
                                                   f"{move.new_path} {since}")
            if found is not None:
                return found
        found = self._symbol_elsewhere(record, move.new_path if move else None)
        if found is not None:
            return found
        if move is not None:
            return Verification(Verdict.HISTORICAL,
                                f"file renamed to {move.new_path} {since}; symbol "
                                f"{record.symbol} no longer exists there")
        return None

    def _symbol_elsewhere(self, record: ChunkRecord, passed: str | None = None
                          ) -> Verification | None:
        """The verdict at another file of the diff that holds ``record``'s code under its
        name today (``passed``: a path already looked at): a function moved between two
        modules, the first of them still there, or gone."""
        since = f"since indexing at {short(record.commit)}"
        for elsewhere in self._symbol_moves(record):
            if elsewhere.new_path in (passed, record.path):
                continue
            found = self._changed_at(record, elsewhere, f"{record.symbol} moved from "
                                                        f"{record.path} to "
                                                        f"{elsewhere.new_path} {since}")
            # Only the same code under the same name moved: another file's ``main`` or
            # ``test_basic`` is not where this one went.
            if found is not None and lines_kept(record.text, found.current_text or "") \
                    >= KEPT_SHARE:
                return found
        return None

    def _following(self, follow: Callable[[ChunkRecord], Verification | None],
                   record: ChunkRecord) -> Verification | None:
        """``follow(record)`` along the diff since the stamp, its reads counted; None when the
        stamp's commit is gone (force push, gc): nothing to follow."""
        before = self._moves.reads
        try:
            return follow(record)
        except PermanentError:
            return None
        finally:
            self.git_reads += self._moves.reads - before

    def _changed_at(self, record: ChunkRecord, move: Move, why: str) -> Verification | None:
        """The verdict at the file ``record``'s moved to, where its definition is under its
        name or renamed in place (its class renamed with the file); None when neither."""
        text = self._moved_text(move)
        span = self._locate(record, move.new_path, text) if text is not None else None
        renamed = self._renamed_at(record, move.new_path) \
            if text is not None and span is None else None
        span = renamed.span if renamed is not None else span
        if text is None or span is None:
            return None
        return self._changed(record, why, text, span, moved_to=move.new_path, renamed=renamed)

    def _symbol_moves(self, record: ChunkRecord) -> list[Move]:
        """Files of the diff that define ``record``'s symbol (not for module code, which has
        no name of its own to look for)."""
        if is_module_code(record.symbol) or record.kind == WINDOW_KIND:
            return []
        name = record.symbol.rsplit(".", 1)[-1]
        return self._moves.symbol_moves(record.commit, record.path, lambda text: name in text)

    def _moved_text(self, move: Move) -> str | None:
        if self.target.worktree:
            return self.current_text(move.new_path)
        return self._moves.text(move.new_blob)

    def _locate(self, record: ChunkRecord, path: str, text: str,
                nearest: bool = True) -> tuple[int, int] | None:
        if record.kind == WINDOW_KIND:  # text without symbols: follow the line range
            last_line = line_count(text)
            return (record.start_line, min(record.end_line, last_line)) \
                if record.start_line <= last_line else None
        if path not in self._symbols:
            self._symbols[path] = file_symbols(path, text)
        return locate(record, self._symbols[path], lambda: self._indexed_symbols(record), nearest)

    def _renamed_at(self, record: ChunkRecord, path: str) -> Renamed | None:
        """``record``'s definition renamed in place in ``path``'s file as last located."""
        symbols = self._symbols.get(path)
        return None if symbols is None else \
            renamed_in_place(record, symbols, lambda: self._indexed_symbols(record))

    def _indexed_symbols(self, record: ChunkRecord) -> FileSymbols | None:
        """The file as the record was indexed from (its blob), parsed once per blob; asked for
        only when a name is defined more than once today. None when the blob is not here."""
        if record.blob_sha not in self._indexed:
            try:
                text = self._moves.text(record.blob_sha)
            except PermanentError:  # not in this clone (gc, a shallow or partial one)
                text = None
            self._indexed[record.blob_sha] = file_symbols(record.path, text) if text else None
        return self._indexed[record.blob_sha]

    def _symbol_step(self, record: ChunkRecord, changed_why: str, nearest: bool) -> Verification:
        text = self.current_text(record.path)
        if text is None:
            if self.current_bytes(record.path) is None:
                return self._absent(record)
            return Verification(Verdict.HISTORICAL,
                                f"{changed_why}; the file is binary now, the symbol is gone")
        span = self._locate(record, record.path, text, nearest)
        symbols = self._symbols.get(record.path)
        if span is None and symbols is not None and \
                broken_since(symbols, lambda: self._indexed_symbols(record)):
            why = f"{changed_why}; the file does not parse at {self.target.label} (syntax error)"
            found = lines_found(record, symbols)  # its lines as indexed, else no telling
            return self._changed(record, why, text, found) if found else Verification(
                Verdict.UNVERIFIABLE, f"{why}, so its definitions cannot be located: re-read it")
        renamed = self._renamed_at(record, record.path) if span is None else None
        if renamed is not None:
            return self._changed(record, changed_why, text, renamed.span, renamed=renamed)
        if span is None:
            return self._following(self._symbol_elsewhere, record) or Verification(
                Verdict.HISTORICAL, f"{changed_why}; {gone_from(record, symbols)} in "
                                    f"{record.path}")
        return self._changed(record, changed_why, text, span)

    def _changed(self, record: ChunkRecord, why: str, text: str, span: tuple[int, int],
                 moved_to: str | None = None, renamed: Renamed | None = None) -> Verification:
        start, end = span
        shifted = (start, end) != (record.start_line, record.end_line)
        where = (f"renamed to {renamed.name_since(record.symbol)}, " if renamed else "") + \
            f"now at L{start}-L{end}" + (
            f" (was L{record.start_line}-L{record.end_line})" if shifted else "")
        current = line_slice(text, start, end)
        # The file changed elsewhere: say so, so the lines below need no second reading.
        same = renamed.unchanged if renamed else as_indexed(
            record, current, lambda: self._indexed_symbols(record))
        advice = "its code is as indexed" + (" but for the name" if renamed else "") if same \
            else "re-read before use"
        symbol = renamed.symbol if renamed else None
        return Verification(
            Verdict.CHANGED, f"{why}; {record.symbol} {where}: {advice}",
            current_start_line=start, current_end_line=end, current_text=current,
            moved_to=moved_to, renamed_to=symbol, current_signature=signature_at(
                self._symbols.get(moved_to or record.path), symbol or record.symbol, span))

    def file_move(self, commit: str, path: str, blob_sha: str) -> Move | None:
        """Where ``path`` (``blob_sha`` at ``commit``) went since ``commit`` (``MoveFinder``,
        bounded as for a search result), its reads counted."""
        before = self._moves.reads
        try:
            return self._moves.file_move(commit, path, blob_sha)
        finally:
            self.git_reads += self._moves.reads - before

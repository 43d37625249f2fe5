"""The pieces of a context slice (SPEC §7): its sections (``section.py``), read from today's
files.

``SliceBuilder`` turns verified search results into sections: the symbol with its import
block, the type definitions at its boundary and up to ``BREATHING_LINES`` lines after it
(whole definitions only); its direct callers' signatures (whole when the search matched them
too); its module and the modules it imports; the symbols the symbol graph reaches from it.
Code is always read from today's file (head blob or work tree); only historical reference
material comes from the index. ``levels`` says which sections each level is made of;
``build.fit`` then packs them into the budget in the order a level lists them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from freshmark.core.chunking import (
    Chunk,
    FileSymbols,
    chunk_text,
    file_symbols,
    line_count,
    split_lines,
)
from freshmark.core.chunking.model import CONTAINER_KINDS
from freshmark.core.citation import Citation, cite, elides_members
from freshmark.core.errors import UnsafePath
from freshmark.core.stamp import ChunkRecord, own_name
from freshmark.core.verdicts import CODE_TODAY_VERDICTS, Verdict
from freshmark.services.context.call_standing import CallStanding
from freshmark.services.context.imports import (
    IMPORT_KEPT_MAX_LINES,
    IMPORT_TRIM_OVER_LINES,
    import_block,
    used_import_lines,
)
from freshmark.services.context.indexed_text import IndexedText
from freshmark.services.context.section import NotShown, Section, estimate_tokens
from freshmark.services.context.section_lines import breathing_end, calling_line, signature_lines
from freshmark.services.context.symbol_graph import Edge, SymbolGraph
from freshmark.services.open_branch import OpenedBranch
from freshmark.services.retrieval.results import VerifiedResult

MAX_CALLERS = 5
MAX_CALLER_POINTERS = 15
# Callers among the first evidence are shown whole, not by their signature.
MATCHED_CALLERS = 5
MAX_TYPES = 3
# Of a slice's budget (1/N), the most the room after its evidence and a type at its boundary
# may take, else the room is left out and the type is its signature: at a small budget they
# pushed the matches out (Express's app.render showed app.listen's doc while View.lookup was
# cut; gin's 100-line Engine struct left out Context.ClientIP).
BREATHING_SHARE = 10
TYPE_SHARE = 4
MAX_REFERENCES = 2
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A name qualified by its module or package (``nodes.Template``, Go's ``http.Handler``).
_MODULE_QUALIFIED = re.compile(r"\b([a-z]\w*)\.([A-Za-z_]\w*)")
# Module-level blocks, line windows and namespaces: no design idea of their own to take as
# reference, nor a signature that says what they do with a callee.
_NO_SYMBOL_KINDS = frozenset({"block", "window", "module"})


def _lines(text: str, start: int, end: int) -> str:
    return "\n".join(split_lines(text)[start - 1 : end])


# -- the builder -----------------------------------------------------------------------------------
class SliceBuilder:
    """Assembles the sections of one slice from verified results and today's files."""

    def __init__(self, opened: OpenedBranch, results: list[VerifiedResult], graph: SymbolGraph,
                 evidence: Sequence[VerifiedResult] = (), budget_tokens: int | None = None):
        self.opened = opened
        self.budget_tokens = budget_tokens  # the slice's: what room and types may take of it
        self.results = results
        self.graph = graph
        # A caller among the first evidence holds part of the answer (requests' rebuild_auth
        # deletes the header should_strip_auth decides on): it is shown whole.
        self.matched = {(r.record.path, r.record.symbol) for r in evidence[:MATCHED_CALLERS]}
        self.verifier = opened.verifier
        self.indexed = IndexedText(opened.index)  # the graph's records hold no text
        self._chunks: dict[str, list[Chunk]] = {}
        self._symbols: dict[str, FileSymbols] = {}
        self.edge_standing = CallStanding(graph, self._code_today, self.today)

    # -- today's files -----------------------------------------------------------------------------
    def today(self, path: str) -> str | None:
        """Today's text of ``path``; None when absent or unsafe to read (a symlink out of the
        work tree), whose result the verifier labels on its own."""
        try:
            return self.verifier.current_text(path)
        except UnsafePath:
            return None

    def today_chunks(self, path: str) -> list[Chunk]:
        """Today's chunks of ``path`` (every part, in line order), re-chunked from the current
        text."""
        if path not in self._chunks:
            self._chunks[path] = chunk_text(path, self.today(path) or "")
        return self._chunks[path]

    def today_definition(self, path: str, symbol: str, line: int, callee: str = ""
                         ) -> tuple[Chunk, tuple[int, int]] | None:
        """Today's definition of ``symbol`` in ``path``: its first chunk and its whole span.
        Of a name defined more than once (overloads), the one whose lines hold ``line``
        (where the record's code is today) and, for a caller, whose chunks reference
        ``callee``; else one that references it, else the one holding ``line``, else the
        first."""
        symbols = self.today_symbols(path)
        spans = symbols.units.get(symbol) or \
            [span for span in [symbols.first_spans().get(symbol)] if span is not None]
        chunks = [c for c in self.today_chunks(path) if c.symbol == symbol]
        found = []
        for start, end in spans:
            own = [c for c in chunks if start <= c.start_line <= end]
            if own:
                found.append((own, (start, end)))
        if not found:
            return None

        def holds(d: tuple[list[Chunk], tuple[int, int]]) -> bool:
            return d[1][0] <= line <= d[1][1]

        def calls(d: tuple[list[Chunk], tuple[int, int]]) -> bool:
            return not callee or any(callee in c.references for c in d[0])

        for wanted in (lambda d: holds(d) and calls(d), calls, holds):
            matching = [d for d in found if wanted(d)]
            if matching:
                return matching[0][0][0], matching[0][1]
        return found[0][0][0], found[0][1]

    def definition_key(self, path: str, symbol: str, line: int) -> tuple[str, str, int]:
        """Which definition of ``symbol`` line ``line`` is in: (path, symbol, its first line
        today), so two overloads are two and two parts of one definition one (0: a name no
        unit defines)."""
        for start, end in self.today_symbols(path).units.get(symbol, []):
            if start <= line <= end:
                return path, symbol, start
        return path, symbol, 0

    def region_citation(self, path: str, start: int, end: int, label: str,
                        how: str = "read from today's file") -> Citation:
        target = self.opened.target
        when = "uncommitted" if target.worktree else self.verifier.head_date()
        return Citation(f"{path}#L{start}-L{end}  ({label})", f"{target.label} ({when})",
                        "check", how)

    # -- pieces -----------------------------------------------------------------------------------
    def symbol_section(self, result: VerifiedResult, role: str, breathing: bool) -> Section | None:
        record, v = result.record, result.verification
        path = result.path_today
        text = self.today(path)
        if text is None:
            return None
        part = (v.current_start_line or record.start_line, v.current_end_line or record.end_line)
        # One part of a definition chunked in parts stands for all of it; the part alone is
        # the last fallback, and its [LEFT OUT] line names the whole.
        start, end = self._whole_definition(path, record.kind, result.symbol_today, *part)
        only_part = self._trimmed(result, text, *part) if (start, end) != part else None
        lines = split_lines(text)
        shown_end = breathing_end(lines, end, self.today_symbols(path).every_span()) if breathing \
            else min(len(lines), end)
        if self.budget_tokens and shown_end > end and estimate_tokens(
                _lines(text, end + 1, shown_end)) > self.budget_tokens // BREATHING_SHARE:
            shown_end = end
        confidence = "medium" if v.verdict is Verdict.CHANGED else "high"
        note = f"(+{shown_end - end} lines after, breathing room)" if shown_end > end else ""
        fallback = only_part
        if breathing:
            fallback = self._trimmed(result, text, start, end)
            fallback.fallback = only_part
        return Section(role, path, result.symbol_today, start, end, confidence,
                       self._citation_of(result, start, end),
                       _lines(text, start, shown_end), start, str(v.verdict), note,
                       record.language, fallback=fallback)

    def _whole_definition(self, path: str, kind: str, symbol: str, start: int, end: int
                          ) -> tuple[int, int]:
        """Today's lines of the whole definition ``symbol`` (its name today) whose lines
        ``start..end`` are one part (a long function is chunked in parts); ``start..end`` for
        anything else."""
        if kind in CONTAINER_KINDS:
            return start, end  # an outline is the container's own form, not a part of it
        spans = self.today_symbols(path).units.get(symbol, [])
        return next(((first, last) for first, last in spans
                     if first <= start and end <= last), (start, end))

    def _trimmed(self, result: VerifiedResult, text: str, start: int, end: int) -> Section:
        return Section("evidence", result.path_today, result.symbol_today, start, end,
                       "medium" if result.verification.verdict is Verdict.CHANGED else "high",
                       self._citation_of(result, start, end), _lines(text, start, end), start,
                       str(result.verification.verdict), "", result.record.language)

    def _citation_of(self, result: VerifiedResult, start: int, end: int) -> Citation:
        """The result's citation, or for a part standing for its whole definition, one of
        the lines shown."""
        path, part_start, part_end = result.lines_today
        return result.citation if (start, end) == (part_start, part_end) else \
            self.region_citation(path, start, end, result.symbol_today)

    def import_section(self, path: str, language: str, user: Section | None = None
                       ) -> Section | None:
        """The file's import block; a long one is trimmed to the statements ``user`` (the
        symbol's section) names, so L1's budget goes to the symbol, not to 50 imports (None
        when it names none of them)."""
        text = self.today(path)
        span = import_block(path, text, language) if text else None
        if text is None or span is None:
            return None
        start, end = span
        citation = self.region_citation(path, start, end, "import block")
        if end - start + 1 <= IMPORT_TRIM_OVER_LINES or user is None:
            return Section("imports", path, "imports", start, end, "high", citation,
                           _lines(text, start, end), start, language=language)
        own = user.body.splitlines()[: user.end_line - user.body_start + 1] \
            if user.body_start else user.body.splitlines()  # not the breathing room after it
        kept = used_import_lines(split_lines(text)[start - 1 : end], start, "\n".join(own),
                                 language, own_name(user.symbol))
        if not kept:
            return None  # the symbol uses none of them: nothing worth its budget
        shown = kept[:IMPORT_KEPT_MAX_LINES]
        body = "\n".join(f"{number:>5}  {line}" for number, line in shown)
        cut = f"; {len(kept) - len(shown)} more lines it uses left out" if kept[len(shown):] \
            else ""
        note = (f"(trimmed: {len(shown)} of {end - start + 1} lines, the imports "
                f"{user.symbol} uses{cut})")
        return Section("imports", path, "imports", start, end, "high", citation, body, 0,
                       note=note, language=language)

    def today_symbols(self, path: str) -> FileSymbols:
        if path not in self._symbols:
            self._symbols[path] = file_symbols(path, self.today(path) or "")
        return self._symbols[path]

    def live_section(self, record: ChunkRecord, role: str, confidence: str, note: str,
                     signature_only: bool, callee: str = "") -> Section | None:
        """A related symbol read from today's file; None if it is not usable any more.

        Functions come as their exact lines (numbered); types as their outline with member
        bodies elided (a Go struct, whose members have none, as its lines); callers as their
        signature only, that of the overload that references ``callee``.
        """
        record = self.indexed.of(record)  # verified against the text it was indexed from
        verification = self.verifier.verify(record)
        if verification.verdict not in CODE_TODAY_VERDICTS:
            return None
        path = verification.moved_to or record.path  # a moved file is read where it is today
        found = self.today_definition(path, record.symbol,
                                      verification.current_start_line or record.start_line, callee)
        if found is None:
            return None
        chunk, span = found
        head_date = self.verifier.head_date() if verification.verdict is Verdict.CHANGED else None
        start, end = span
        citation = cite(record, verification, self.opened.target, head_date,
                        self.verifier.commit_date(record.commit),
                        self.verifier.read_uncommitted(verification, path))
        if (start, end) != (record.start_line, record.end_line):
            # The indexed chunk may be only a part of the symbol (a long class is chunked in
            # parts); the label shows today's whole span, so the citation must name it too.
            citation = self.region_citation(path, start, end, record.symbol)
        verdict = str(verification.verdict)
        if signature_only:
            lines = self.today_symbols(path).lines
            if chunk.kind in _NO_SYMBOL_KINDS and callee and \
                    (row := calling_line(lines, start, end, callee)) is not None:
                return Section(role, path, record.symbol, start, end, confidence, citation,
                               lines[row - 1].strip(), 0, verdict, note + " (the calling line)",
                               record.language, stands_for=chunk.text, signature_lines=(row, row))
            return Section(role, path, record.symbol, start, end, confidence, citation,
                           chunk.signature, 0, verdict, note + " (signature only)",
                           record.language, stands_for=chunk.text,
                           signature_lines=signature_lines(lines, start, end, chunk.signature,
                                                           own_name(record.symbol)))
        # A long class is chunked in parts, the first often its header and docstring alone:
        # the outline of the whole span, never one part's, says whether members are elided.
        outline = self.today_symbols(path).outline(span) \
            if chunk.kind in CONTAINER_KINDS else None
        if elides_members(chunk.kind, outline or chunk.text):
            return Section(role, path, record.symbol, start, end, confidence, citation,
                           outline or chunk.text, 0, verdict, note + " (member bodies elided)",
                           record.language)
        body = _lines(self.today(path) or "", start, end)
        return Section(role, path, record.symbol, start, end, confidence, citation,
                       body, start, verdict, note, record.language)

    def type_sections(self, primary: VerifiedResult) -> list[Section]:
        record = primary.record
        names = [*_IDENTIFIER.findall(record.signature), *record.references]
        if record.language == "go":  # ``http.Handler`` is another package's; its own are bare
            bare = set(_IDENTIFIER.findall(_MODULE_QUALIFIED.sub(" ", record.text)))
            names = [name for name in names if name in bare]
        container = record.symbol.rsplit(".", 1)[0] if "." in record.symbol else None
        ids = self.graph.type_definitions(names, record.path, {
            name: module for module, name in _MODULE_QUALIFIED.findall(record.signature)})
        own = self.graph.find(record.path, container) if container else None
        ordered = ([own] if own else []) + [i for i in ids if i != own]
        out: list[Section] = []
        self.indexed.load(self.graph.nodes[node_id] for node_id in ordered[:MAX_TYPES])
        for node_id in ordered[:MAX_TYPES]:
            node = self.graph.nodes[node_id]
            section = self.live_section(node, "type", "high", "type definition at the boundary",
                                        signature_only=False)
            if section is not None and self.budget_tokens and \
                    estimate_tokens(section.body) > self.budget_tokens // TYPE_SHARE:
                section = self.live_section(node, "type", "high", "type definition at the "
                                            "boundary", signature_only=True)
            if section is not None:
                out.append(section)
        unlisted = [self.graph.nodes[i] for i in ordered[MAX_TYPES:]][:5]
        if out and unlisted:
            # Said of the evidence, on the last type shown: not a type that one uses.
            out[-1].not_shown = NotShown(own_name(record.symbol), tuple(
                (node.path, node.symbol, node.start_line, node.end_line) for node in unlisted))
            out[-1].note += out[-1].not_shown.text()
        return out

    def _code_today(self, record: ChunkRecord) -> str | None:
        found = self.today_definition(record.path, record.symbol, record.start_line)
        return None if found is None else self.today_symbols(record.path).text_of(found[1])

    def caller_sections(self, primary: VerifiedResult) -> list[Section]:
        node_id = self.graph.node_of(primary.record)
        if node_id is None:
            return []
        judged = [(edge, self.edge_standing(edge)) for edge in self.graph.callers(node_id)]
        edges = self._spread_over_files(
            [(edge, standing) for edge, standing in judged if standing is not None])
        out: list[Section] = []
        self.indexed.load(self.graph.nodes[edge.caller] for edge, _ in edges[:MAX_CALLERS])
        for edge, confirmed in edges[:MAX_CALLERS]:
            caller = self.graph.nodes[edge.caller]
            # A class's users subclass, annotate or build it: "caller" would say more.
            role = "direct user" if primary.record.kind in CONTAINER_KINDS else "direct caller"
            confidence, how = ("high", f"{role} (graph-confirmed)") if confirmed \
                else ("medium", f"{role} (name match only)")
            callee = own_name(primary.record.symbol)
            section = self.live_section(caller, "caller", confidence, how, signature_only=True,
                                        callee=callee)
            if section is not None and (caller.path, caller.symbol) in self.matched:
                whole = self.live_section(caller, "caller", confidence,
                                          how + ", a match of the query", signature_only=False,
                                          callee=callee)
                if whole is not None:  # its signature, should the whole not fit
                    whole.fallback, section = section, whole
            if section is not None:
                out.append(section)
        return out + self._caller_pointers(edges[MAX_CALLERS:])

    def _spread_over_files(self, edges: list[tuple[Edge, bool]]) -> list[tuple[Edge, bool]]:
        """Confirmed callers first, each file's first caller before any file's second: 129
        callers in three files must not all be shown from the first file."""
        seen: dict[str, int] = {}
        order = []
        for edge, confirmed in edges:
            path = self.graph.nodes[edge.caller].path
            seen[path] = seen.get(path, 0) + 1
            order.append((not confirmed, seen[path]))
        return [pair for _, pair in sorted(zip(order, edges, strict=True),
                                           key=lambda item: item[0])]

    def _caller_pointers(self, edges: list[tuple[Edge, bool]]) -> list[Section]:
        """The callers past ``MAX_CALLERS``, one line each where they are today (a slice names
        every caller it knows, shown, pointed at or left out; at most ``MAX_CALLER_POINTERS``),
        each saying whether the graph confirmed the call or only its name matched."""
        out: list[Section] = []
        shown = edges[:MAX_CALLER_POINTERS]
        self.indexed.load(self.graph.nodes[edge.caller] for edge, _ in shown)
        for edge, confirmed in shown:
            caller = self.indexed.of(self.graph.nodes[edge.caller])
            v = self.verifier.verify(caller)
            if v.verdict in CODE_TODAY_VERDICTS:
                path, start, end = v.lines_today(caller.path, caller.start_line,
                                                 caller.end_line)
                out.append(Section("caller", path, caller.symbol, start, end, "medium", None,
                                   verdict=str(v.verdict), stands_for=caller.text,
                                   note="another caller (graph-confirmed, not included)"
                                   if confirmed else
                                   "another caller (name match only, not included)"))
        unlisted = edges[MAX_CALLER_POINTERS:]
        if out and unlisted:  # named by count and files, never dropped unsaid
            files = list(dict.fromkeys(self.graph.nodes[e.caller].path for e, _ in unlisted))
            out[-1].note += (f"; {len(unlisted)} more caller{'s' * (len(unlisted) > 1)} not "
                             f"listed, in {', '.join(files[:3])}"
                             + (f" and {len(files) - 3} more files" if len(files) > 3 else ""))
        return out

    def module_section(self, path: str, role: str, language: str, note: str) -> Section | None:
        text = self.today(path)
        if not text:
            return None
        total = line_count(text)
        return Section(role, path, "module", 1, total, "high",
                       self.region_citation(path, 1, total, "whole file"), text, 1, None, note,
                       language)

    def signature_digest(self, path: str, role: str, language: str, note: str) -> Section | None:
        """Each definition of ``path`` today (overloads too) by its whole lines and signature,
        a class chunked in parts included, for a module over the budget."""
        symbols = self.today_symbols(path)
        if not symbols.signatures:
            return None
        body = "\n".join(f"L{start}-L{end}  {symbols.signatures[(start, end)]}"
                         for start, end in sorted(symbols.signatures))
        last = line_count(self.today(path) or "")
        return Section(role, path, "module", 1, last, "high",
                       self.region_citation(path, 1, last, "signatures only"), body, 0, None,
                       (note + " (signatures only: the whole file does not fit in what is left "
                               "of the budget)").strip(),
                       language)

    def reference_sections(self, history: list[VerifiedResult]) -> list[Section]:
        """The deleted definitions among ``history`` (the deleted code the query matches),
        once each, as reference only."""
        historical = list({(r.record.path, r.record.symbol): r for r in history
                           if r.record.kind not in _NO_SYMBOL_KINDS}.values())
        return [Section("reference", r.record.path, r.record.symbol, r.record.start_line,
                        r.record.end_line, "low", r.citation, r.record.own_text,
                        r.record.start_line,
                        "historical", "reference only — history, not today's code",
                        r.record.language)
                for r in historical[:MAX_REFERENCES]]

    def candidate_sections(self, taken: list[Section],
                           evidence: list[VerifiedResult]) -> list[Section]:
        """Other verified matches: their code, or a pointer (one line) when it does not fit.
        Those in a whole module taken are kept: the module may not fit and fall back, and one
        that does is skipped when the slice is packed, its lines shown."""
        whole_files = {s.path for s in taken if s.role in ("module", "dependency")}
        taken = [s for s in taken if s.path not in whole_files]
        skip = {self.definition_key(s.path, s.symbol, s.start_line) for s in taken}
        out: list[Section] = []
        for r in evidence:
            v = r.verification
            path, start, end = v.lines_today(r.record.path, r.record.start_line,
                                             r.record.end_line)
            key = self.definition_key(path, r.record.symbol, start)
            if key in skip or any(
                    s.path == path and s.body_start and s.start_line <= end
                    and start <= s.shown_end for s in taken):
                continue
            skip.add(key)
            pointer = Section("candidate", path, r.record.symbol, start, end, "medium",
                              None, verdict=str(v.verdict), note="other match (not included)",
                              stands_for=r.record.text)
            code = self.symbol_section(r, "match", breathing=False)
            if code is not None and r.record.kind not in _NO_SYMBOL_KINDS:
                code.note = "another match of the query"
                code.smallest().fallback = pointer  # after the part of a long definition
                out.append(code)
            else:
                out.append(pointer)
        return out

"""The levels of a context slice (SPEC §7): which sections each one is made of.

**L1** the symbol with its import block, the type definitions at its boundary and its direct
callers' signatures; **L2** its whole module (the symbol, should it not fit) and the modules it
imports; **L3** the symbol and its boundary, the call chain the symbol graph reaches from it
(callers and callees, ``L3_DEPTH`` hops) and those symbols' code.
"""

from __future__ import annotations

from collections.abc import Callable

from freshmark.core.citation import Citation
from freshmark.core.kinds import is_secondary
from freshmark.core.stamp import own_name
from freshmark.core.verdicts import short
from freshmark.services.context.section import Section
from freshmark.services.context.slices import SliceBuilder
from freshmark.services.context.symbol_graph import Edge, SymbolGraph
from freshmark.services.retrieval.results import VerifiedResult

L3_DEPTH = 2
L3_MAX_SYMBOLS = 24


def _symbol_and_boundary(builder: SliceBuilder, primary: VerifiedResult) -> list[Section]:
    out: list[Section] = []
    main = builder.symbol_section(primary, "evidence", breathing=True)
    if main is not None:
        out.append(main)
    imports = builder.import_section(primary.path_today, primary.record.language, main)
    if imports is not None:
        out.append(imports)
    return out + builder.type_sections(primary)


def _level_1(builder: SliceBuilder, primary: VerifiedResult) -> list[Section]:
    return _symbol_and_boundary(builder, primary) + builder.caller_sections(primary)


def _level_2(builder: SliceBuilder, primary: VerifiedResult) -> list[Section]:
    record = primary.record
    module = builder.module_section(primary.path_today, "module", record.language,
                                    f"the module of {record.symbol}")
    if module is None:
        return _level_1(builder, primary)
    module.fallback = builder.symbol_section(primary, "evidence", breathing=True)
    out = [module]
    referenced = set(record.references)
    graph = builder.graph
    dependencies = sorted(
        graph.imported_files(record.path),
        key=lambda path: not any(own_name(n.symbol) in referenced
                                 for n in graph.nodes.values() if n.path == path),
    )
    for path in dependencies:
        language = next((n.language for n in graph.nodes.values() if n.path == path), "")
        section = builder.module_section(path, "dependency", language,
                                         f"imported by {primary.path_today}")
        if section is not None:
            section.fallback = builder.signature_digest(path, "dependency", language,
                                                        f"imported by {primary.path_today}")
            out.append(section)
    # A module over the budget falls back to the symbol alone: L1's other material follows,
    # so L2 never serves less than L1 (a module that fits shows it, and it is skipped), and
    # then the module's signatures, skipped too when the module is shown whole.
    digest = builder.signature_digest(primary.path_today, "related", record.language,
                                      f"the module of {record.symbol}")
    return out + [s for s in _level_1(builder, primary) if s.role != "evidence"] + \
        ([digest] if digest is not None else [])


def _implementation_first(graph: SymbolGraph, node_id: str, up: bool, down: bool
                          ) -> list[Edge]:
    """The node's edges, to its callers when ``up`` and to its callees when ``down``, those to
    tests, examples and docs last: twenty example programs calling a symbol must not use up
    ``L3_MAX_SYMBOLS`` before its real callers."""
    def to_secondary(edge: Edge) -> bool:
        other = graph.nodes[edge.caller if edge.callee == node_id else edge.callee]
        return is_secondary(other.path, other.file_kind)

    edges = (graph.callers(node_id) if up else []) + (graph.callees(node_id) if down else [])
    return sorted(edges, key=to_secondary)


def _walk(graph: SymbolGraph, start: str,
          standing: Callable[[Edge], bool | None]) -> list[tuple[str, bool, int, str]]:
    """Symbols reached from ``start`` over callers and callees, breadth first, each path one
    way: callers of its callers up, callees of its callees down, never a callee's other
    callers (rich's ``Console.print`` calls ``Style``, which is no relation of ``Style``'s
    other users). (node id, edge confirmed by ``standing``, depth, one call-chain line). An
    edge whose standing is None (the caller's code today makes no such call) is no
    relation. A symbol is confirmed only when every edge of its path is: one reached past a
    name match is a guess however sure its last edge. A symbol reached by several edges at
    one depth is shown by a confirmed one, in the place the first took (express's
    ``tryRender``: ``app.render`` calls it, and its ``view.render`` only matches the name)."""
    seen = {start}
    # a node, whether to go up, down from it, and whether the path to it is confirmed
    frontier = [(start, True, True, True)]
    reached: list[tuple[str, bool, int, str]] = []
    for depth in range(1, L3_DEPTH + 1):
        following: list[tuple[str, bool, bool, bool]] = []
        guessed: dict[str, int] = {}  # a node reached at this depth past a name match: its place
        for node_id, up, down, sure in frontier:
            for edge in _implementation_first(graph, node_id, up, down):
                upward = edge.callee == node_id
                other = edge.caller if upward else edge.callee
                stronger = other in guessed and sure
                if not stronger and (other in seen or len(reached) >= L3_MAX_SYMBOLS):
                    continue
                confirmed = standing(edge)
                if confirmed is None or stronger and not confirmed:
                    continue
                caller, callee = graph.nodes[edge.caller], graph.nodes[edge.callee]
                how = "graph-confirmed" if confirmed else "name match only"
                step = (other, upward, not upward, sure and confirmed)
                line = (other, sure and confirmed, depth,
                        f"{caller.symbol} ({caller.path}:L{caller.start_line}) -> "
                        f"{callee.symbol} ({callee.path}:L{callee.start_line})  [{how}]")
                if stronger:
                    place = guessed.pop(other)
                    following[place], reached[len(reached) - len(following) + place] = step, line
                    continue
                seen.add(other)
                if not (sure and confirmed):
                    guessed[other] = len(following)
                following.append(step)
                reached.append(line)
        frontier = following
    return reached


def _level_3(builder: SliceBuilder, primary: VerifiedResult) -> list[Section]:
    out = _symbol_and_boundary(builder, primary)
    graph = builder.graph
    start = graph.node_of(primary.record)
    if start is None:
        return out
    reached = _walk(graph, start, builder.edge_standing)
    if not reached:
        return out
    manifest = builder.opened.index.manifest if builder.opened.index else None
    indexed_commit = (manifest.commit if manifest else None) or ""
    chain = Citation(
        f"symbol graph of {manifest.collection if manifest else '?'} ({len(reached)} relations)",
        f"{builder.opened.target.branch}@{short(indexed_commit)} "
        f"({builder.verifier.commit_date(indexed_commit) or 'date unknown'})",
        "check", "relations recorded at index time; 'name match only' ones are inferred (low)")
    record = primary.record
    out.append(Section("call_chain", primary.path_today, "call chain", record.start_line,
                       record.end_line, "high" if all(r[1] for r in reached) else "medium",
                       chain, "\n".join(r[3] for r in reached)))
    per_file: dict[str, int] = {}
    for node_id, _, _, _ in reached:
        path = graph.nodes[node_id].path
        per_file[path] = per_file.get(path, 0) + 1
    ordered = sorted(reached, key=lambda r: (is_secondary(graph.nodes[r[0]].path,
                                                          graph.nodes[r[0]].file_kind),
                                             r[2], not r[1], -per_file[graph.nodes[r[0]].path]))
    builder.indexed.load(graph.nodes[node_id] for node_id, _, _, _ in ordered)
    for node_id, confirmed, depth, _ in ordered:
        node = graph.nodes[node_id]
        # Seed 004 template C: inferred dependencies must be marked low.
        section = builder.live_section(node, "related", "high" if confirmed else "low",
                                       f"reached in {depth} hop(s) over the call graph",
                                       signature_only=False)
        if section is not None:
            out.append(section)
    return out


LEVEL_BUILDERS = {"L1": _level_1, "L2": _level_2, "L3": _level_3}

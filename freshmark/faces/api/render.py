"""Answers as text for people and agents: what the CLI prints and what an MCP tool's text
content holds (its structured content is the JSON answer).

An MCP client hands a model the text content, not the structured one; a text that repeated the
JSON would make an agent pay for every result twice. The text is the compact reading instead:
each result's verdict, citation header and at most ``SHOWN_LINES`` lines of its code, saying what
was cut.

Plain dictionaries in (the answers' ``to_dict()``), lines of text out.
"""

from __future__ import annotations

from typing import Any

from freshmark.core.lag import lag_phrase

# Code lines shown per result unless the full form is asked for: a signature and the start
# of the body, not a whole 48-line docstring or a 39-line import block.
SHOWN_LINES = 12


def _index_lines(index: dict[str, Any], target: dict[str, Any]) -> list[str]:
    layers = ", ".join(f"{name}@{(stamp.get('commit') or '?')[:7]} ({stamp.get('indexed_at')})"
                       for name, stamp in index["layers"].items())
    where = "work tree on " if target["worktree"] else ""
    return [f"index:    {index['collection']} at {(index['commit'] or '?')[:7]}, built "
            f"{index['indexed_at'] or '?'}; layers: {layers or '-'}",
            f"verified: against {where}{target['branch']}@{target['head'][:7]}"]


def _passed_over(response: dict[str, Any]) -> str:
    hidden = response.get("hidden_historical") or 0
    passed = f"; {hidden} historical passed over (code gone since indexing; --history " \
        "shows them)" if hidden else ""
    deleted = response.get("deleted_named") or 0
    if deleted:
        passed += f"; {deleted} deleted definition{'s' if deleted > 1 else ''} of that name " \
            "passed over (--history shows them)"
    return passed


def search_lines(response: dict[str, Any], full: bool) -> list[str]:
    """A chunk search's answer: the index, the counts, then each result with its citation
    and its code (``SHOWN_LINES`` of it unless ``full``)."""
    lines = _index_lines(response["index"], response["target"])
    counts = ", ".join(f"{n} {v}" for v, n in sorted(response["verdicts"].items())) or "none"
    lines.append(f"results:  {len(response['results'])} ({counts}){_passed_over(response)}")
    work = response.get("uncommitted")
    if work and (work["new_files"] or work["changed_files"] or work.get("deleted_files") or
                 work.get("moved_files")):
        named = f" ({', '.join(work['new_paths'])})" if work["new_paths"] else ""
        seen = ", ".join(f"{work.get(field) or 0} {kind}" for field, kind in (
            ("changed_files", "changed"), ("deleted_files", "deleted"), ("moved_files", "moved")))
        lines.append(f"uncommitted: {work['new_files']} new{named}, not searched until "
                     f"committed and indexed; {seen}, verified as they are now")
    if response.get("unindexed"):
        lines.append(lag_phrase(response["unindexed"]))
    if response.get("edited"):
        lines.append(f"edited:   {', '.join(response['edited'])} changed in the work tree since "
                     "the head; verified against the head (--worktree: against the disk)")
    if response.get("gone"):
        lines.append(f"gone:     {', '.join(response['gone'])} deleted or moved in the work tree "
                     "since the head; verified against the head (--worktree: against the disk)")
    for result in response["results"]:
        lines += ["", f"[{result['rank']}] {result['verdict']} ({result['seed_word']}) — "
                      f"{result['action']} [{result['file_kind']}]", result["citation"],
                  *_part_line(result)]
        lines += [f"    {line}" for line in code_lines(result, None if full else SHOWN_LINES)]
    return lines


def _part_line(result: dict[str, Any]) -> list[str]:
    """Which part of its definition a result is and where the others are; none for a whole
    definition."""
    parts = [tuple(lines) for lines in result.get("parts") or []]
    own = (result["start_line"], result["end_line"])
    if own not in parts:
        return []
    others = ", ".join(f"L{start}-L{end}" for start, end in parts if (start, end) != own)
    return [f"part:    {parts.index(own) + 1} of {len(parts)} of {result['symbol']} "
            f"(L{parts[0][0]}-L{parts[-1][1]}); the rest: {others}"]


def code_lines(result: dict[str, Any], limit: int | None) -> list[str]:
    """The result's code, at most ``limit`` lines of it (all for None) and then what was cut;
    the signature goes first when the lines shown do not hold it (a long docstring or
    decorator list above it). A later part of a long definition carries its head: a mark
    after it says where the part's own lines start, so no line is taken for another."""
    lines = result["text"].splitlines()
    carried = result.get("head_lines") or 0
    # Bounded, a head of several lines (a long signature) gives way to the one-line signature
    # below: the part's own lines are what it was found by.
    head = lines[:carried] if limit is None or carried == 1 else []
    where = "the head above" if head else f"its head, {carried} lines, left out"
    mark = [f"⋮ ({where}; L{result['start_line']} on below)"] if carried else []
    shown = [*head, *mark, *lines[carried:]]
    if limit is None or len(shown) <= limit:
        return shown
    marked = _around_the_marked_line(result, lines, limit)
    if marked is not None:
        return marked
    kept, head = shown[:limit], []
    signature = next(iter(_signature(result).strip().splitlines()), "")
    if signature and not _holds(kept, signature):
        kept, head = shown[:limit - 1], [f"signature: {signature}"]
    cut = len(shown) - len(kept) - (1 if mark and mark[0] not in kept else 0)
    return [*head, *kept, f"… {cut} more lines (--full shows all)"]


# A line of a comment above a declaration: ``/**``, `` * …``, ``//``, ``#``, ``--``, ``@Ann``.
_COMMENT_MARKS = ("*", "/*", "//", "#", "--", "@")


def _holds(lines: list[str], signature: str) -> bool:
    """The ``lines`` shown hold the one-line ``signature``, spread over several lines as a
    long parameter list is (rich's ``def print(\n self,\n …``) or cut short."""
    shown = " ".join(" ".join(lines).split())
    return " ".join(signature.removesuffix("…").split())[:80] in shown


def _around_the_marked_line(result: dict[str, Any], lines: list[str], limit: int
                            ) -> list[str] | None:
    """A module block or an interface found for the name it declares (``declared_at``), or a
    chunk holding a pasted message (``message_at``), below the lines a bounded answer shows:
    the lines from that line's own comment on (or from two lines above it), the comment
    taking at most half the lines shown."""
    start = result.get("current_start_line") or result["start_line"]
    declared = result.get("declared_at")
    what = "declares it" if declared else "holds the message"
    line = declared or result.get("message_at") or 0
    # An outline's rows are not its lines: the row is given with the line.
    row = result.get("declared_row") if declared else None
    row = line - start if row is None else row
    if row < limit - 2 or row >= len(lines):
        return None
    first = row
    while first > row - limit // 2 and lines[first - 1].lstrip().startswith(_COMMENT_MARKS):
        first -= 1
    first = min(first, row - 2)
    kept = lines[first:first + limit - 1]
    after = len(lines) - first - len(kept)
    return [f"⋮ ({first} lines above; L{line} {what})", *kept,
            *([f"… {after} more lines (--full shows all)"] if after else [])]


def _signature(result: dict[str, Any]) -> str:
    """The signature of the code shown: today's for lines read from today's file (the stamped
    one may be of the old name or an old parameter list), then none when it is not known (a
    compact answer leaves out an empty one); the stamped one for the indexed text."""
    today = result.get("current_signature")
    if today is not None:
        return str(today)
    stamped = str(result.get("signature") or "")
    served_today = result.get("verdict") == "changed" and result.get("current_start_line")
    return "" if served_today and stamped.strip() not in result["text"] else stamped


def files_lines(response: dict[str, Any]) -> list[str]:
    """A file search's answer: each file with its best chunks' lines and verdicts."""
    lines = _index_lines(response["index"], response["target"])
    lines.append(f"files:    {len(response['files'])}")
    if response.get("unindexed"):
        lines.append(lag_phrase(response["unindexed"]))
    for found in response["files"]:
        lines += ["", f"[{found['rank']}] {found['path']}  ({found['file_kind']}, "
                      f"{found['verdict']})"]
        for chunk in found["chunks"]:
            symbol = f"  {chunk['symbol']}" if chunk["symbol"] else ""
            lines.append(f"    L{chunk['start_line']}-L{chunk['end_line']}{symbol}  "
                         f"{chunk['verdict']}")
    return lines


def verify_lines(report: dict[str, Any]) -> list[str]:
    """A verify report: one line per snippet, then the counts."""
    target = report["target"]
    where = "work tree on " if target["worktree"] else ""
    lines = [f"verified against {where}{target['branch']}@{target['head'][:7]}"]
    for line in report["lines"]:  # seed words are in the JSON: wide characters break columns
        symbol = f"  ({line['symbol']})" if line["symbol"] else ""
        lines.append(f"L{line['line']:<5} {line['verdict']:<15} {line['path'] or '-'}"
                     f"{symbol}  {line['reason']}")
    unsafe = sum(1 for line in report["lines"]
                 if line["verdict"] not in ("current", "older_identical"))
    counts = ", ".join(f"{n} {v}" for v, n in sorted(report["verdicts"].items()))
    lines.append(f"{len(report['lines'])} lines: {counts}; not safe to use as is: {unsafe}")
    return lines


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def check_lines(report: dict[str, Any]) -> list[str]:
    """An answer check: each reference with its problems, the [MISSING] lines, the verdict."""
    lines = []
    for ref in report["references"]:
        mark = "ok " if not ref["problems"] else "BAD"
        why = "; ".join(ref["problems"])
        lines.append(f"{mark} {ref['text']}" + (f"  — {why}" if why else ""))
    for line in report["missing"]:
        named = ", ".join(line["paths"] + line["symbols"]) or "nothing named"
        state = "exists" if line["existing"] else "not found"
        lines.append(f"MISSING {named}: {state}")
    lines.append(f"{report['refs']} references, {report['hallucinated_refs']} hallucinated, "
                 f"compliance {_percent(report['compliance'])}, "
                 f"{report['missing_lines']} [MISSING] line(s); "
                 + ("keeps the contract" if report["passed"] else "breaks the contract"))
    return lines


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A folder of answers checked: the figures against their targets."""
    lines = [f"{result['answers']} answers, {result['refs']} references"]
    for name, target in result["targets"].items():
        value = result["figures"][name]
        met = result["meets_targets"][name]
        bound = ("< " if target["below"] else "> ") + _percent(target["bound"])
        state = "not measured" if met is None else ("meets" if met else "MISSES")
        lines.append(f"  {name:<18} {_percent(value):>8}  target {bound:<8} {state}")
    if result["failed_answers"]:
        lines.append("answers breaking the contract: " + ", ".join(result["failed_answers"]))
    return lines

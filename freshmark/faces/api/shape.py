"""The compact form of a search answer, and the full one on request (CLI ``--full``, HTTP and
MCP ``full``).

An agent pays for every byte it reads. The compact form keeps, on every result, what the
contract needs: the SPEC §1 mandatory stamp fields (``verify`` reads them back, and a result
without one is ``unverifiable``) and the verification (verdict, reason, citation, text, rank),
whatever their values. Every other field is left out when it is empty (null, ``""``, ``[]``,
``{}``: ``tombstoned_in`` on live code, ``current_start_line`` on unchanged code...), and the
ranking diagnostics (``explain``) are left out altogether; so are the answer's notes that say
nothing this time (``unindexed`` at the head, ``edited`` and ``gone`` with a clean work tree).
The full form is the answer as the services give it: every field, nulls included.

Plain dictionaries in, plain dictionaries out: the CLI uses this without loading pydantic.
"""

from __future__ import annotations

from typing import Any

from freshmark.core.stamp import MANDATORY_FIELDS

# Kept on every result in both forms, whatever their value.
CONTRACT_FIELDS = frozenset({*MANDATORY_FIELDS, "verdict", "reason", "citation", "text", "rank"})
# Why a result ranked where it did: for tuning the ranking, not for using the code.
DIAGNOSTIC_FIELDS = frozenset({"explain"})
# An answer's notes on what its index lacks or the work tree changed: null when there is none.
NOTE_FIELDS = frozenset({"uncommitted", "unindexed", "edited", "gone"})


def compact_result(result: dict[str, Any]) -> dict[str, Any]:
    """One result (or one chunk of a file answer) in the compact form."""
    return {name: value for name, value in result.items()
            if name in CONTRACT_FIELDS
            or (name not in DIAGNOSTIC_FIELDS and not _is_empty(value))}


def _is_empty(value: Any) -> bool:
    """Null or an empty text, list or mapping; 0 and false say something and stay."""
    return value is None or (isinstance(value, str | list | dict) and not value)


def shaped(answer: dict[str, Any], full: bool) -> dict[str, Any]:
    """A search answer (``results``) or a file answer (``files`` with their ``chunks``) in the
    form asked for; the answer itself is not changed."""
    if full:
        return answer
    out = {name: value for name, value in answer.items()
           if name not in NOTE_FIELDS or not _is_empty(value)}
    if "results" in out:
        out["results"] = [compact_result(r) for r in out["results"]]
    if "files" in out:
        out["files"] = [{**found, "chunks": [compact_result(c) for c in found["chunks"]]}
                        for found in out["files"]]
    return out

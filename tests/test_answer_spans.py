"""What a slice showed, as check-answer reads it from the context's JSON: numbered bodies, the
lines a trimmed section numbers itself, a signature's own lines (its definition only as a
whole, by its name), an outline cited by its own name, and nothing for a pointer."""

from __future__ import annotations

from freshmark.core.answers import ServedSlice, _symbol_in_lines, check_reference, parse_answer

PATH = "Slim/MiddlewareDispatcher.php"
FILE = "\n".join(f"line {n} addDeferred add MiddlewareDispatcher use" for n in range(1, 301))


class Head:
    def text(self, path: str) -> str | None:
        return FILE if path == PATH else None


def section(role: str, symbol: str, start: int, end: int, text: str = "",
            shown: tuple[int, int] | None = None, note: str = "") -> dict:
    return {"role": role, "path": PATH, "symbol": symbol, "start_line": start,
            "end_line": end, "text": text, "shown_start": shown[0] if shown else None,
            "shown_end": shown[1] if shown else None, "note": note}


SLICE = ServedSlice.from_context({"level": "L1", "target": {"branch": "main"}, "sections": [
    section("evidence", "MiddlewareDispatcher.addMiddleware", 98, 126, "body", (98, 126)),
    section("imports", "imports", 13, 29, "   15  use A;\n   16  use B;"),
    section("type", "MiddlewareDispatcher", 31, 275, "class MiddlewareDispatcher\n{\n  ...\n}"),
    section("candidate", "MiddlewareDispatcher.addDeferred", 128, 232),
    section("caller", "MiddlewareDispatcher.add", 68, 96, "public function add($m)", (71, 71),
            "direct caller (graph-confirmed) (signature only)"),
]})
# A context saved before sections said a signature's lines: its note says what it showed.
OLDER = ServedSlice.from_context({"level": "L1", "target": {"branch": "main"}, "sections": [
    section("caller", "MiddlewareDispatcher.add", 68, 96, "public function add($m)",
            note="direct caller (graph-confirmed) (signature only)"),
]})


def judged(reference: str, served: ServedSlice = SLICE):
    (parsed,) = parse_answer(reference).references
    return check_reference(parsed, served, Head())


def test_lines_of_a_numbered_body_are_in_the_slice():
    assert judged(f"[{PATH}:L100-L110 | addMiddleware | high]").in_slice


def test_lines_only_a_pointer_names_are_not_in_the_slice():
    assert not judged(f"[{PATH}:L135-L160 | MiddlewareDispatcher.addDeferred | high]").in_slice


def test_a_member_body_an_outline_elided_is_not_in_the_slice():
    assert not judged(f"[{PATH}:L128-L232 | addDeferred | high]").in_slice


def test_an_outline_cited_by_its_own_name_is_in_the_slice():
    assert judged(f"[{PATH}:L31-L275 | MiddlewareDispatcher | high]").in_slice


def test_a_signature_s_own_lines_are_in_the_slice():
    assert judged(f"[{PATH}:L71-L71 | MiddlewareDispatcher.add | medium]").in_slice


def test_a_signature_s_definition_cited_whole_by_its_name_is_in_the_slice():
    assert judged(f"[{PATH}:L68-L96 | MiddlewareDispatcher.add | medium]").in_slice
    assert not judged(f"[{PATH}:L68-L96 | addDeferred | medium]").in_slice
    assert judged(f"[{PATH}:L68-L96 | add | medium]", OLDER).in_slice


def test_body_lines_behind_a_signature_are_not_in_the_slice():
    for served in (SLICE, OLDER):
        assert not judged(f"[{PATH}:L71-L96 | MiddlewareDispatcher.add | medium]",
                          served).in_slice
        assert not judged(f"[{PATH}:L80-L85 | add | medium]", served).in_slice


def test_only_the_import_lines_shown_are_in_the_slice():
    assert judged(f"[{PATH}:L15-L16 | use | high]").in_slice
    assert not judged(f"[{PATH}:L20-L20 | use | high]").in_slice


def test_a_symbol_absent_from_the_cited_lines_breaks_compliance():
    check = judged(f"[{PATH}:L100-L110 | refund_order | high]")
    assert check.symbol_in_lines is False and not check.compliant


def test_lines_inside_a_later_overload_may_be_cited_by_its_name():
    text = ("class CodeWriter {\n  void emitCode(String s) { emitCode(s, 1); }\n\n"
            "  void emitCode(String s, int n) {\n    int total = n;\n    total += 2;\n"
            "    write(total);\n  }\n}\n")
    assert _symbol_in_lines("CodeWriter.emitCode", text, 6, 7, "poet/CodeWriter.java") is True
    assert _symbol_in_lines("CodeWriter.emitCode", text, 9, 9, "poet/CodeWriter.java") is False

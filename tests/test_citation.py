"""The three-line citation header (SPEC §3, seed 000 §3.5) for every verdict."""

from __future__ import annotations

from freshmark.core.citation import HISTORICAL_USE, cite, cite_file
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import Target, Verdict, Verification

HEAD = "9f3c1ab" + "0" * 33
OLD_ARCH = "8d0a1f2" + "0" * 33


def record(**overrides: object) -> ChunkRecord:
    values: dict[str, object] = dict(
        repo="shop", branch="main", commit=HEAD, path="src/orders/services/order_service.py",
        symbol="OrderService.cancel_order", start_line=41, end_line=58,
        indexed_at="2026-09-29T10:41:00Z", blob_sha="7be2" + "0" * 36,
        content_sha256="4a91c0f7d2e8" + "0" * 52,
    )
    values.update(overrides)
    return ChunkRecord(**values)  # type: ignore[arg-type]


MAIN = Target("main", HEAD)


def test_current_header_is_exactly_the_specs_three_lines():
    header = cite(record(), Verification(Verdict.CURRENT, "hash matches"), MAIN,
                  commit_date="2026-09-29").lines()
    assert header == [
        "source:  src/orders/services/order_service.py#L41-L58  (OrderService.cancel_order)",
        "version: main@9f3c1ab (2026-09-29)",
        "check:   hash matches — same content as indexed",
    ]


def test_historical_header_ends_with_a_use_line():
    old = record(branch="feature/old-arch", commit=OLD_ARCH,
                 path="src/orders/handlers/cancel_handler.py", symbol="CancelOrderHandler",
                 indexed_at="2026-03-11T08:00:00Z", status="tombstoned")
    header = cite(old, Verification(Verdict.HISTORICAL, "module deleted in 8d0a1f2"),
                  MAIN, commit_date="2026-03-11").lines()
    assert header[1] == "version: feature/old-arch@8d0a1f2 (2026-03-11)"
    assert header[2] == ("use:     module deleted in 8d0a1f2 — reference for design ideas only, "
                         "do not implement against it")
    assert HISTORICAL_USE in header[2]


def test_changed_header_cites_todays_lines_and_the_head_they_were_read_from():
    changed = Verification(Verdict.CHANGED, "file changed since 9f3c1ab; now at L45-L63",
                           current_start_line=45, current_end_line=63, current_text="x\n")
    target = Target("main", "c0ffee1" + "0" * 33)
    source, version, check = cite(record(), changed, target, head_date="2026-10-02",
                                  commit_date="2026-09-29").lines()
    assert source == ("source:  src/orders/services/order_service.py#L45-L63  "
                      "(OrderService.cancel_order)")
    assert version.startswith("version: main@c0ffee1 (2026-10-02) — re-read; indexed at "
                              "main@9f3c1ab (2026-09-29)")
    assert check.startswith("check:   file changed since 9f3c1ab")


def test_version_date_is_the_commit_date_not_the_index_date():
    indexed_later = record(indexed_at="2026-12-01T09:00:00Z")
    verification = Verification(Verdict.OLDER_IDENTICAL, "indexed at 9f3c1ab, file unchanged")
    assert cite(indexed_later, verification, MAIN, commit_date="2026-09-29").lines()[1] == \
        "version: main@9f3c1ab (2026-09-29)"
    assert cite(indexed_later, verification, MAIN).lines()[1] == \
        "version: main@9f3c1ab (date unknown)"


def test_older_identical_header_says_older_but_identical():
    header = cite(record(), Verification(Verdict.OLDER_IDENTICAL, "indexed at 9f3c1ab, file "
                                                                  "unchanged since"), MAIN)
    assert header.lines()[2].startswith("check:   older but identical: indexed at 9f3c1ab")


def test_excluded_header_is_a_use_line_with_the_reason():
    header = cite(record(file_kind="generated"),
                  Verification(Verdict.EXCLUDED, "generated code: regenerate it"), MAIN)
    assert header.lines()[2] == "use:     excluded, generated code: regenerate it"


def test_unverifiable_header_calls_it_a_clue():
    header = cite(record(commit=""), Verification(Verdict.UNVERIFIABLE, "no version metadata: "
                                                                        "missing commit"), MAIN)
    assert header.lines()[2] == ("check:   no version metadata: missing commit — "
                                 "a clue, not evidence")


def test_header_text_is_three_newline_separated_lines():
    text = cite(record(), Verification(Verdict.CURRENT, "hash matches"), MAIN).text()
    assert text.count("\n") == 2 and not text.endswith("\n")


def test_snippet_list_line_without_hash_has_no_version():
    header = cite_file("docs/design/error-codes.md", None,
                       Verification(Verdict.UNVERIFIABLE, "no version metadata: no hash "
                                                          "recorded"), MAIN).lines()
    assert header[0] == "source:  docs/design/error-codes.md"
    assert header[1] == "version: unknown (no version metadata)"


def test_class_skeleton_is_cited_as_an_outline_not_as_the_lines():
    skeleton = ChunkRecord(
        repo="shop", branch="main", commit="9f3c1ab" + "0" * 33, path="shop/order.py",
        symbol="Order", start_line=389, end_line=445, indexed_at="2026-09-29T10:00:00Z",
        blob_sha="b" * 40, content_sha256="c" * 64, kind="class",
        text="class Order:\n    def cancel(self):\n        ...\n")
    citation = cite(skeleton, Verification(Verdict.CURRENT, "same commit"),
                    Target("main", "9f3c1ab" + "0" * 33, worktree=False))
    lines = citation.lines()
    assert "#L389-L445  (Order, skeleton: member bodies elided as ...)" in lines[0]
    assert "same content as indexed" not in lines[2]
    assert "outline of those lines" in lines[2]


def test_a_go_interface_with_a_variadic_member_is_cited_as_its_lines():
    router = ChunkRecord(
        repo="chi", branch="main", commit="735ae2b" + "0" * 33, path="chi.go",
        symbol="Router", start_line=66, end_line=69, indexed_at="2026-09-29T10:00:00Z",
        blob_sha="b" * 40, content_sha256="c" * 64, kind="interface",
        text="type Router interface {\n\tUse(middlewares ...func(http.Handler) http.Handler)\n"
             "\tWith(middlewares ...func(http.Handler) http.Handler) Router\n}")
    citation = cite(router, Verification(Verdict.CURRENT, "same commit"),
                    Target("main", "735ae2b" + "0" * 33, worktree=False))
    lines = citation.lines()
    assert "skeleton" not in lines[0] and "same content as indexed" in lines[2]

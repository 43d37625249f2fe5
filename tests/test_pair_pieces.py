"""Pairing a name's definitions before and today (pure): overloads keep their identity when
one of them is removed, moved or edited."""

from __future__ import annotations

from freshmark.core.locate import Piece, pair_pieces

A = Piece(5, "f(int a)", "f(int a) {\n  return a;\n}")
B = Piece(10, "f(int a, int b)", "f(int a, int b) {\n  return a + b;\n}")
C = Piece(15, "f(String s)", "f(String s) {\n  return s.length();\n}")


def test_removing_the_first_overload_leaves_it_unpaired_and_pairs_the_rest_by_text():
    today = [Piece(5, B.signature, B.text), Piece(10, C.signature, C.text)]
    assert pair_pieces([A, B, C], today) == {1: 0, 2: 1}


def test_an_edited_overload_is_paired_by_its_signature_wherever_it_is():
    edited = Piece(3, C.signature, "f(String s) {\n  return 0;\n}")
    assert pair_pieces([A, B, C], [edited, A, B]) == {0: 1, 1: 2, 2: 0}


def test_a_renamed_parameter_is_paired_by_the_lines_in_common():
    longer = Piece(5, "f(int x, int b)", "f(int x, int b) {\n  log();\n  return a + b;\n}")
    assert pair_pieces([A, B], [A, longer]) == {0: 0, 1: 1}


def test_stored_chunks_without_text_pair_by_their_digest_only():
    stored = [Piece(5, "f(int a)", digest="1"), Piece(10, "g()", digest="2")]
    assert pair_pieces(stored, [Piece(1, "h()", digest="2")]) == {1: 0}

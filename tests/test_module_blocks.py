"""Module-level code has no name of its own: its blocks are named by position (``<module>``,
``<module>#2``…), and one top-level line added above renumbers every block below. Neither the
verifier nor the indexer lets such a name decide that code was removed (real git histories).
"""

from __future__ import annotations

import pytest
from repo_builder import RepoBuilder
from search_fixtures import verifier
from test_indexer import records, run
from test_verify_moves import all_chunks, chunks_of

from freshmark.core.verdicts import Verdict

BLOCKS = '''import os


def first():
    return 1


CACHE = {}
NAMES = ["a", "b"]


def second():
    return 2


__all__ = ["first", "second"]
'''
# A new block between ``first`` and CACHE: CACHE's block is <module>#3 from now on.
LIMIT = '''

LIMIT = 10


def zero():
    return 0
'''
WITH_LIMIT = BLOCKS.replace("    return 1\n", "    return 1\n" + LIMIT, 1)
CACHE_LINES = (15, 16)  # CACHE's block in WITH_LIMIT (L8-L9 in BLOCKS)

NOTES = "import os\n\n\ndef a():\n    return 1\n\n\n{notes}def b():\n    return 2\n"

# A module block over 150 lines is split into parts (L5-L154 and L155-L204).
BIG = "def first():\n    return 1\n\n\n" + "".join(f"VALUE_{i} = {i}\n" for i in range(200))
ABOVE = "LIMIT = 10\n\n\ndef zero():\n    return 0\n\n\n"
BIG_ABOVE = ABOVE + BIG  # the big block is now <module>#2, ABOVE's 7 lines lower


@pytest.fixture
def lib(make_repo) -> RepoBuilder:
    return make_repo("lib")


# -- verify -------------------------------------------------------------------------------------
def test_module_code_tombstoned_under_a_shifted_positional_name_is_not_historical(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    renumbered_in = lib.write("blocks.py", WITH_LIMIT).commit("limit")
    record.status, record.tombstoned_in = "tombstoned", renumbered_in
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == CACHE_LINES
    assert result.current_text == 'CACHE = {}\nNAMES = ["a", "b"]\n'
    assert "its code is as indexed" in result.reason


def test_module_code_tombstoned_where_its_name_still_has_it_stays_historical(lib):
    """A guard: tombstoned for another reason (the file excluded or reclassified since)."""
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    tombstoned_in = lib.write("blocks.py", BLOCKS.replace("return 2", "return 3")).commit("3")
    record.status, record.tombstoned_in = "tombstoned", tombstoned_in
    assert verifier(lib).verify(record).verdict is Verdict.HISTORICAL


def test_module_code_of_a_renamed_file_is_said_to_be_where_its_lines_are(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    lib.rename("blocks.py", "pkg/blocks.py")
    moved_in = lib.write("pkg/blocks.py", WITH_LIMIT).commit("move and add LIMIT")
    record.status, record.tombstoned_in = "tombstoned", moved_in
    record.successor = "pkg/blocks.py"
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert result.reason.endswith("<module>#2 is now at pkg/blocks.py#L15-L16")


def test_one_part_of_a_split_module_block_is_found_at_its_own_lines(lib):
    lib.write("values.py", BIG).commit("values")
    second_part = [r for r in all_chunks(lib, lib.head(), "values.py")
                   if r.symbol == "<module>"][1]
    assert (second_part.start_line, second_part.end_line) == (155, 204)
    lib.write("values.py", BIG_ABOVE).commit("limit above")
    result = verifier(lib).verify(second_part)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (162, 211)
    assert "its code is as indexed" in result.reason


def test_a_module_block_replaced_by_other_code_in_its_place_is_historical(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    rewritten = BLOCKS.replace('CACHE = {}\nNAMES = ["a", "b"]\n', "SIZES = dict()\nKINDS = []\n")
    lib.write("blocks.py", rewritten).commit("rewrite the tables")
    result = verifier(lib).verify(record)
    # Not one of its lines is left: the block in its place is other code, not this one.
    assert result.verdict is Verdict.HISTORICAL


def test_a_module_block_edited_in_its_place_is_changed_there(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    edited = BLOCKS.replace('CACHE = {}\nNAMES = ["a", "b"]\n', 'CACHE = {}\nNAMES = ["a"]\n')
    lib.write("blocks.py", edited).commit("edit the tables")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert result.current_text == 'CACHE = {}\nNAMES = ["a"]\n'
    assert "re-read before use" in result.reason


def test_module_code_is_changed_at_the_closest_block_when_the_indexed_file_is_not_here(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    record.blob_sha = "0" * 40  # a blob this clone lacks (gc, a shallow clone)
    lib.write("blocks.py", BLOCKS.replace('CACHE = {}\nNAMES = ["a", "b"]\n', "")).commit("drop")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert result.current_text == '__all__ = ["first", "second"]\n'  # L14: nearer L8 than L1


def test_module_code_that_became_part_of_a_definition_is_found_at_its_lines(lib):
    # Comments after the last definition are module code; a definition added below them
    # starts at them.
    notes = "# Notes on b:\n# it returns two.\n"
    before_b = NOTES.replace("{notes}", notes).split("def b()")[0]
    lib.write("notes.py", before_b).commit("notes")
    record = chunks_of(lib, lib.head(), "notes.py")["<module>#2"]
    assert record.text == notes.rstrip("\n")
    lib.write("notes.py", NOTES.replace("{notes}", notes)).commit("the notes are b's doc")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (8, 9)
    assert "its code is as indexed" in result.reason


# -- index --------------------------------------------------------------------------------------
def test_a_block_added_above_module_blocks_restamps_them_under_their_new_names(store_env, lib):
    lib.write("values.py", BIG).commit("values")
    run(lib)
    before = {r.start_line: r for r in records(lib) if r.symbol == "<module>"}
    lib.write("values.py", BIG_ABOVE).commit("limit above")
    summary = run(lib)
    assert summary["chunks_tombstoned"] == 0 and summary["chunks_updated"] == 0
    assert summary["chunks_added"] == summary["embeddings_computed"] == 2  # LIMIT, zero
    after = {r.id: r for r in records(lib)}
    for start, part in before.items():
        now = after[part.id]
        assert now.status == "live" and now.symbol == "<module>#2"
        assert now.start_line == start + 7 and now.text == part.text


def test_a_removed_module_block_is_tombstoned_and_the_next_one_keeps_its_id(store_env, lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    run(lib)
    before = {r.symbol: r for r in records(lib)}
    removed_in = lib.write("blocks.py", BLOCKS.replace('CACHE = {}\nNAMES = ["a", "b"]\n', ""))\
        .commit("drop the tables")
    run(lib)
    after = {r.id: r for r in records(lib)}
    cache = after[before["<module>#2"].id]
    assert cache.status == "tombstoned" and cache.tombstoned_in == removed_in
    assert cache.text.startswith("CACHE = {}")
    exported = after[before["<module>#3"].id]
    assert exported.status == "live" and exported.symbol == "<module>#2"
    assert exported.text == '__all__ = ["first", "second"]'

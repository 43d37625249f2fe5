"""A function or method renamed in place gets one answer whenever the index ran: before
re-indexing its chunk is ``changed`` under its new name (``test_renamed_in_place``); after, the
indexer has tombstoned that chunk, and the tombstone is ``changed`` the same way, at the
definition's lines today, not ``historical`` "removed" (real git histories)."""

from __future__ import annotations

import pytest
from repo_builder import RepoBuilder
from search_fixtures import index, verifier
from test_renamed_in_place import BYTES, PARSE, WORDS_PY
from test_verify_moves import chunks_of

from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE, TOMBSTONED, ChunkRecord
from freshmark.core.verdicts import Verdict
from freshmark.services.retrieval.search import search


@pytest.fixture
def lib(make_repo) -> RepoBuilder:
    return make_repo("lib")


def _tombstoned(repo: RepoBuilder, path: str, text: str, symbol: str, old: str,
                new: str) -> ChunkRecord:
    """Commit ``text``, take ``symbol``'s stamp, commit ``old`` replaced by ``new`` once and
    tombstone the stamp there, as an index run at that commit does."""
    repo.write(path, text).commit("add")
    record = chunks_of(repo, repo.head(), path)[symbol]
    record.status = TOMBSTONED
    record.tombstoned_in = repo.write(path, text.replace(old, new, 1)).commit("rename")
    return record


def test_a_tombstoned_function_renamed_in_place_is_changed_under_its_new_name(lib):
    record = _tombstoned(lib, "words.py", WORDS_PY, "parse", "def parse(", "def tokenize(")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert result.renamed_to == "tokenize"
    assert (result.current_start_line, result.current_end_line) == (4, 8)
    assert "parse renamed to tokenize, now at L4-L8" in result.reason
    assert (result.current_text or "").startswith("def tokenize(text):")


def test_a_renamed_method_gets_the_same_answer_before_and_after_re_indexing(lib):
    lib.write("src/bytes.rs", BYTES).commit("add")
    live = chunks_of(lib, lib.head(), "src/bytes.rs")["Bytes.truncate"]
    renamed_in = lib.write("src/bytes.rs", BYTES.replace("fn truncate(", "fn truncate_to(")) \
        .commit("rename")
    before = verifier(lib).verify(live)
    tombstone = chunks_of(lib, live.commit, "src/bytes.rs")["Bytes.truncate"]
    tombstone.status, tombstone.tombstoned_in = TOMBSTONED, renamed_in
    assert verifier(lib).verify(tombstone) == before
    assert before.verdict is Verdict.CHANGED and before.renamed_to == "Bytes.truncate_to"


def test_a_tombstoned_function_deleted_while_another_is_added_stays_historical(lib):
    """A guard: a new name with other code is not where the old code went."""
    record = _tombstoned(lib, "words.py", WORDS_PY, "parse", PARSE,
                         "def tokenize(text):\n    return text.split()\n")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert result.reason.startswith("symbol parse removed from words.py")


def test_a_history_search_after_re_indexing_serves_the_rename_not_a_removal(fm_home, lib):
    lib.write("words.py", WORDS_PY).commit("add")
    index(lib.path)
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize(")).commit("rename")
    index(lib.path)
    answer = search(SearchRequest.build("parse", k=5, include_history=True), str(lib.path),
                    settings=Settings.from_env())
    assert Verdict.HISTORICAL not in {r.verification.verdict for r in answer.results}
    assert answer.results[0].verification.renamed_to == "tokenize"
    assert [r.code_today for r in answer.results].count(("words.py", 4, 8)) == 1


def test_a_look_up_of_a_name_renamed_in_place_counts_no_deleted_definition(fm_home, lib):
    lib.write("words.py", WORDS_PY).commit("add")
    index(lib.path)
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize(")).commit("rename")
    index(lib.path)
    answer = search(SearchRequest.build("parse", k=5), str(lib.path),
                    settings=Settings.from_env())
    assert answer.deleted_named == 0
    lib.write("words.py", WORDS_PY.replace(PARSE, "")).commit("delete it")
    index(lib.path)
    answer = search(SearchRequest.build("tokenize", k=5), str(lib.path),
                    settings=Settings.from_env())
    assert answer.deleted_named == 1


def test_a_history_search_serves_the_renamed_code_once_as_its_live_chunk(fm_home, lib):
    """The tombstone verifies to the lines the new name's chunk holds: one result, not two,
    and the live chunk's, whichever ranked first."""
    lib.write("words.py", WORDS_PY).commit("add")
    index(lib.path)
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize(")).commit("rename")
    index(lib.path)
    answer = search(SearchRequest.build("parse tokenize", k=10, include_history=True),
                    str(lib.path), settings=Settings.from_env())
    at_lines = [r for r in answer.results if r.code_today == ("words.py", 4, 8)]
    assert [(r.record.symbol, r.record.status) for r in at_lines] == [("tokenize", LIVE)]
    assert len(answer.results) >= 2  # the file's other definitions still fill the places


def test_a_history_look_up_of_the_old_name_serves_the_rename_first_for_any_k(fm_home, lib):
    """As without history: the renamed code first, once, saying it was renamed."""
    lib.write("words.py", WORDS_PY).commit("add")
    index(lib.path)
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize(")).commit("rename")
    index(lib.path)

    def first(k: int) -> tuple[str | None, tuple[str, int, int] | None]:
        answer = search(SearchRequest.build("parse", k=k, include_history=True),
                        str(lib.path), settings=Settings.from_env())
        return answer.results[0].verification.renamed_to, answer.results[0].code_today

    assert first(1) == first(10) == ("tokenize", ("words.py", 4, 8))


def test_a_look_up_of_a_name_renamed_since_serves_it_under_its_new_name_first(fm_home, lib):
    """After the index ran again the old name is only a tombstone's, yet the code is there:
    the same answer as before the index ran, once, whatever k."""
    lib.write("words.py", WORDS_PY).commit("add")
    index(lib.path)
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize(")).commit("rename")
    index(lib.path)
    for k in (1, 5):
        answer = search(SearchRequest.build("parse", k=k), str(lib.path),
                        settings=Settings.from_env())
        first = answer.results[0]
        assert first.verification.renamed_to == "tokenize"
        assert first.code_today == ("words.py", 4, 8)
        assert [r.code_today for r in answer.results].count(("words.py", 4, 8)) == 1
        assert answer.deleted_named == 0

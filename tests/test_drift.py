"""Dependency drift (seed 000 §4.8, SPEC §10): an unchanged result whose dependencies changed
says so, its verdict unchanged; on real git histories and a real index."""

from __future__ import annotations

from search_fixtures import PATHS, build_shop, index

from freshmark.core.drift import DriftNote, imported_paths, is_dependency
from freshmark.core.lru import LruCache
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.services.retrieval.search import search

UTIL_V1 = '''def used(x):
    return x + 1


def unused(x):
    return x - 1
'''
CALLER = '''from app.util import used


def compute_total(x):
    """Total of an order."""
    return used(x) * 2
'''


def find(repo_path, query: str, symbol: str) -> dict:
    response = search(SearchRequest.build(query, k=10), str(repo_path),
                      settings=Settings.from_env()).to_dict()
    return next(r for r in response["results"] if r["symbol"] == symbol)


def test_an_unchanged_result_names_the_dependency_that_changed_under_it(fm_home, make_repo):
    shop = build_shop(make_repo)  # indexed before the domain rule changed; the service did not
    result = find(shop.path, "OrderService cancel_order", "OrderService.cancel_order")
    assert result["verdict"] == "older_identical"
    drift = {note["symbol"]: note for note in result["drift"]}
    assert drift["ensure_cancellable"] == {"symbol": "ensure_cancellable",
                                           "path": PATHS["domain"], "change": "changed",
                                           "commit": shop.head}
    assert "depends on code that changed since: ensure_cancellable" in result["citation"]


def test_a_drift_note_names_its_commit_as_the_files_last_not_the_symbols():
    note = DriftNote("Context", "src/click/core.py", "changed", "a466656" + "0" * 33)
    assert note.text() == "Context (src/click/core.py) changed, its file last changed in a466656"


def _app(make_repo):
    repo = make_repo("app")
    repo.write("app/util.py", UTIL_V1).write("app/orders.py", CALLER)
    repo.commit("initial")
    index(repo.path)
    return repo


def test_no_drift_when_only_definitions_it_does_not_use_changed(fm_home, make_repo):
    repo = _app(make_repo)
    repo.write("app/util.py", UTIL_V1.replace("x - 1", "x - 2"))
    repo.commit("change the unused helper")
    result = find(repo.path, "compute_total order", "compute_total")
    assert result["verdict"] == "older_identical" and not result.get("drift")
    assert "depends on" not in result["citation"]


def test_a_dependency_deleted_since_the_stamp_is_vanished(fm_home, make_repo):
    repo = _app(make_repo)
    repo.write("app/util.py", "def unused(x):\n    return x - 1\n")
    gone = repo.commit("drop used")
    result = find(repo.path, "compute_total order", "compute_total")
    assert [(n["symbol"], n["change"], n["commit"]) for n in result["drift"]] == [
        ("used", "vanished", gone)]


def test_a_result_at_the_head_carries_no_drift(fm_home, make_repo):
    repo = _app(make_repo)
    result = find(repo.path, "compute_total order", "compute_total")
    assert result["verdict"] == "current" and not result.get("drift")


def record(path: str, imports: tuple[str, ...], references: tuple[str, ...]) -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol="f",
                       start_line=1, end_line=2, indexed_at="x", blob_sha="b" * 40,
                       content_sha256="s" * 64, imports=list(imports),
                       references=list(references))


def test_only_changed_files_its_imports_name_are_looked_at():
    caller = record("src/orders/service.py", ("orders.domain.order", "./util"), ("rule",))
    changed = ["src/orders/domain/order.py", "src/orders/util.py", "src/billing/order.py"]
    assert imported_paths(caller, changed) == ["src/orders/domain/order.py",
                                               "src/orders/util.py"]


def test_a_method_is_a_dependency_only_when_its_class_is_named_too():
    assert not is_dependency(record("a.py", (), ("save",)), "OrderRepo.save")
    assert is_dependency(record("a.py", (), ("OrderRepo", "save")), "OrderRepo.save")


def _count_parses(monkeypatch) -> list[str]:
    """A fresh process-wide cache, and the paths parsed for their definitions from now on."""
    from freshmark.services.retrieval import drift

    parsed: list[str] = []
    real = drift.file_symbols

    def counted(path: str, text: str):
        parsed.append(path)
        return real(path, text)

    monkeypatch.setattr(drift, "file_symbols", counted)
    monkeypatch.setattr(drift, "BLOB_DEFINITIONS", LruCache(drift.DEFINITIONS_CACHED))
    return parsed


def test_a_dependency_file_is_parsed_once_per_blob_across_searches(fm_home, make_repo,
                                                                     monkeypatch):
    repo = _app(make_repo)
    repo.write("app/util.py", UTIL_V1.replace("x - 1", "x - 2"))
    repo.commit("change the unused helper")
    parsed = _count_parses(monkeypatch)
    find(repo.path, "compute_total order", "compute_total")
    first = list(parsed)

    find(repo.path, "compute_total order", "compute_total")

    assert first == ["app/util.py", "app/util.py"]  # at the stamp's commit and at the head
    assert parsed == first


def test_a_dependency_changed_between_two_searches_drifts_in_the_second(fm_home, make_repo,
                                                                        monkeypatch):
    repo = _app(make_repo)
    repo.write("app/util.py", UTIL_V1.replace("x - 1", "x - 2"))
    repo.commit("change the unused helper")
    _count_parses(monkeypatch)
    assert not find(repo.path, "compute_total order", "compute_total").get("drift")
    repo.write("app/util.py", UTIL_V1.replace("x + 1", "x + 3"))
    changed = repo.commit("change the helper it uses")

    result = find(repo.path, "compute_total order", "compute_total")

    assert [(n["symbol"], n["change"], n["commit"]) for n in result["drift"]] == [
        ("used", "changed", changed)]


def test_the_paths_changed_since_a_stamp_are_diffed_once_per_head_across_searches(
        fm_home, make_repo, monkeypatch):
    from freshmark.adapters.git.repo import GitRepo
    from freshmark.services.retrieval import drift

    repo = _app(make_repo)
    repo.write("app/util.py", UTIL_V1.replace("x - 1", "x - 2"))
    repo.commit("change the unused helper")
    monkeypatch.setattr(drift, "CHANGED_PATHS", LruCache(drift.CHANGED_PATHS_CACHED))
    diffs: list[tuple[str, str]] = []
    real = GitRepo.paths_changed_between

    def counted(self, old: str, new: str) -> set[str]:
        diffs.append((old, new))
        return real(self, old, new)

    monkeypatch.setattr(GitRepo, "paths_changed_between", counted)
    find(repo.path, "compute_total order", "compute_total")
    find(repo.path, "compute_total order", "compute_total")
    assert len(diffs) == 1
    repo.write("app/util.py", UTIL_V1.replace("x + 1", "x + 3"))
    repo.commit("change the helper it uses")

    assert find(repo.path, "compute_total order", "compute_total")["drift"]
    assert len(diffs) == 2  # a new head is a new pair


def test_a_c_include_names_the_header_and_the_file_implementing_it():
    aux = record("src/jv_aux.c", ("jv.h", "stdio.h"), ("jv_array_append",))
    assert imported_paths(aux, ["src/jv.c", "src/jv.h", "src/main.c"]) == [
        "src/jv.c", "src/jv.h"]


def test_a_go_file_depends_on_its_package_and_on_the_directories_it_imports():
    main = record("cmd/app/main.go", ("github.com/me/app/middleware", "fmt"), ("Logger",))
    changed = ["cmd/app/flags.go", "cmd/app/flags_test.go", "middleware/logger.go", "x/y.go"]
    assert imported_paths(main, changed) == ["cmd/app/flags.go", "middleware/logger.go"]


def test_a_go_function_drifts_when_its_packages_other_file_changes(fm_home, make_repo):
    repo = make_repo("tea")
    repo.write("go.mod", "module example.com/tea\n")
    repo.write("paste.go", "package tea\n\n// PasteMsg is pasted text.\ntype PasteMsg string\n")
    repo.write("input.go", "package tea\n\n// translate turns an event into a message.\n"
               "func translate(e string) PasteMsg {\n\treturn PasteMsg(e)\n}\n")
    repo.commit("tea")
    index(repo.path)
    repo.delete("paste.go").commit("drop paste")
    result = find(repo.path, "translate", "translate")
    assert result["verdict"] == "older_identical"
    assert [(n["symbol"], n["change"]) for n in result["drift"]] == [("PasteMsg", "vanished")]


def test_a_swift_function_drifts_when_a_file_of_its_module_directory_changes(fm_home, make_repo):
    repo = make_repo("parser")
    repo.write("Sources/Parser/Failure.swift",
               "func configurationFailure(_ message: String) -> Error {\n"
               "    return ParserError(message)\n}\n")
    repo.write("Sources/Parser/Command.swift",
               "func failHierarchy(_ name: String) -> Error {\n"
               "    return configurationFailure(\"bad \\(name)\")\n}\n")
    repo.commit("parser")
    index(repo.path)
    repo.write("Sources/Parser/Failure.swift",
               "func configurationFailure(_ message: String, code: Int) -> Error {\n"
               "    return ParserError(message, code)\n}\n").commit("a code")
    result = find(repo.path, "failHierarchy", "failHierarchy")
    assert result["verdict"] == "older_identical"
    assert [n["symbol"] for n in result["drift"]] == ["configurationFailure"]


def test_a_typescript_import_naming_the_compiled_js_file_names_the_ts_file():
    validation = record("lib/validation.ts", ("./utils/obj-filter.js", "../package.json"),
                        ("objFilter",))
    assert imported_paths(validation, ["lib/utils/obj-filter.ts", "lib/usage.ts"]) == [
        "lib/utils/obj-filter.ts"]

"""``freshmark index / status / chunks`` as a user runs them: the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_builder import RepoBuilder, git

from freshmark.core.stamp import MANDATORY_FIELDS

FRESHMARK = [str(Path(sys.executable).parent / "freshmark")]
SPEC_FIELDS = set(MANDATORY_FIELDS) | {
    "kind",
    "language",
    "signature",
    "file_kind",
    "layer",
    "status",
    "tombstoned_in",
    "tombstoned_at",
    "successor",
}


def fm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FRESHMARK, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=300,
    )


def small_repo(make_repo) -> RepoBuilder:
    repo = make_repo("proj")
    repo.write("app/orders.py", "def cancel(order):\n    order.cancelled = True\n")
    repo.write("app/gen/client_pb2.py", "# @generated\nclass Client:\n    pass\n")
    repo.write("lib/util.js", "export function slugify(s) {\n  return s.toLowerCase();\n}\n")
    repo.commit("initial")
    return repo


def test_index_json_prints_the_summary(store_env, make_repo):
    repo = small_repo(make_repo)
    done = fm("index", str(repo.path), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["commit"] == repo.head() and summary["branch"] == "main"
    for key in (
        "files_seen",
        "files_skipped",
        "files_changed",
        "chunks_added",
        "chunks_updated",
        "chunks_tombstoned",
        "embeddings_computed",
        "embeddings_reused",
        "seconds",
    ):
        assert key in summary
    assert summary["chunks_added"] >= 3


def test_index_text_summary_names_counts(fm_home, make_repo):
    repo = small_repo(make_repo)
    done = fm("index", str(repo.path))
    assert done.returncode == 0, done.stderr
    assert "chunks:" in done.stdout and "embeddings:" in done.stdout


def test_index_text_summary_names_a_skipped_file_and_how_to_ask_why(fm_home, make_repo):
    repo = small_repo(make_repo)
    repo.write("blob.bin", "\x00\x01binary")
    repo.commit("binary file")
    done = fm("index", str(repo.path))
    assert done.returncode == 0, done.stderr
    assert "not indexed: blob.bin (binary)" in done.stdout
    assert "chunks --path FILE" in done.stdout


def test_chunks_json_uses_spec_field_names_and_hides_excluded(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    default = json.loads(fm("chunks", str(repo.path), "--json").stdout)
    everything = json.loads(fm("chunks", str(repo.path), "--json", "--all").stdout)
    assert default and set(default[0]) == SPEC_FIELDS
    assert "app/gen/client_pb2.py" not in {c["path"] for c in default}
    assert "app/gen/client_pb2.py" in {c["path"] for c in everything}


def test_chunks_path_glob_filters(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    listed = json.loads(fm("chunks", str(repo.path), "--json", "--path", "lib/**").stdout)
    assert {c["path"] for c in listed} == {"lib/util.js"}


def test_one_file_is_listed_by_its_path_tombstones_only_with_all(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    one = json.loads(fm("chunks", str(repo.path), "--json", "--path", "app/orders.py").stdout)
    assert [(c["path"], c["symbol"]) for c in one] == [("app/orders.py", "cancel")]
    repo.delete("app/orders.py").commit("gone")
    fm("index", str(repo.path))
    listing = ["chunks", str(repo.path), "--json", "--path", "app/orders.py"]
    assert json.loads(fm(*listing).stdout) == []
    every = json.loads(fm(*listing, "--all").stdout)
    assert [(c["symbol"], c["status"]) for c in every] == [("cancel", "tombstoned")]
    generated = ["chunks", str(repo.path), "--json", "--path", "app/gen/client_pb2.py"]
    assert json.loads(fm(*generated).stdout) == []
    assert json.loads(fm(*generated, "--all").stdout)


def test_an_empty_listing_says_why_on_stderr(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    listed = fm("chunks", str(repo.path), "--path", "lib/absent.js")
    assert listed.returncode == 0 and not listed.stdout
    assert "no chunk of" in listed.stderr and "matches --path 'lib/absent.js'" in listed.stderr
    assert fm("chunks", str(repo.path), "--path", "lib/absent.js", "--json").stdout.strip() == "[]"


def test_an_empty_listing_of_one_file_says_why_it_was_not_indexed(fm_home, make_repo):
    repo = small_repo(make_repo)
    repo.write("lib/huge.py", "x = 1\n" * 200_000).commit("a generated table")
    fm("index", str(repo.path))
    listed = fm("chunks", str(repo.path), "--path", "lib/huge.py").stderr
    assert "lib/huge.py is not indexed: oversized, 1,200,000 bytes, over the 1,048,576-byte " \
        "limit (max_file_bytes)" in listed
    assert "lib/absent.js is not a file at" in fm("chunks", str(repo.path), "--path",
                                                  "lib/absent.js").stderr


def test_status_reports_commits_behind_the_head(store_env, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    repo.write("app/orders.py", "def cancel(order):\n    return order\n").commit("one")
    repo.write("app/new.py", "def new():\n    pass\n").commit("two")
    rows = json.loads(fm("status", str(repo.path), "--json").stdout)
    (row,) = rows
    assert row["behind"]["commits_behind"] == 2 and row["behind"]["files_changed"] == 2
    assert row["live_chunks"] > 0 and row["tombstoned_chunks"] == 0
    assert row["embedder"] and row["layers"]["default"]["commit"] == row["commit"]


def test_status_counts_a_moved_file_as_one_change_as_a_search_does(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    repo.rename("app/orders.py", "app/ordering.py").commit("move")
    (row,) = json.loads(fm("status", str(repo.path), "--json").stdout)
    found = json.loads(fm("search", "cancel", "--repo", str(repo.path), "--json").stdout)
    lag = found["unindexed"]
    assert row["behind"]["files_changed"] == 1
    assert (lag["moved_files"], lag["new_files"], lag["deleted_files"]) == (1, 0, 0)


def test_status_takes_the_repository_as_search_does(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    by_repo = json.loads(fm("status", "--repo", str(repo.path), "--json").stdout)
    assert by_repo == json.loads(fm("status", str(repo.path), "--json").stdout)
    twice = fm("status", str(repo.path), "--repo", "elsewhere")
    assert twice.returncode == 2 and "name the repository once" in twice.stderr


def test_bare_repository_indexes_its_default_branch(fm_home, make_repo, tmp_path):
    repo = small_repo(make_repo)
    bare = tmp_path / "proj.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(bare))
    done = fm("index", str(bare), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commit"] == repo.head()


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        ("plain-dir", "not a git repository"),
        ("empty-repo", "no commits"),
        ("missing-branch", "nope"),
    ],
)
def test_fatal_inputs_exit_nonzero_with_one_line(fm_home, make_repo, tmp_path, setup, needle):
    args: list[str]
    if setup == "plain-dir":
        target = tmp_path / "plain"
        target.mkdir()
        args = ["index", str(target)]
    elif setup == "empty-repo":
        args = ["index", str(RepoBuilder.init(tmp_path / "empty").path)]
    else:
        args = ["index", str(small_repo(make_repo).path), "--branch", "nope"]
    done = fm(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0].lower(), done.stderr
    assert "Traceback" not in done.stderr


def test_chroma_server_down_is_a_retryable_one_line_error(fm_home, make_repo, monkeypatch):
    from conftest import free_port

    repo = small_repo(make_repo)
    monkeypatch.setenv("FRESHMARK_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    done = fm("index", str(repo.path))
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1 and "unreachable" in done.stderr


def test_status_of_a_never_indexed_repo_says_so(fm_home, make_repo):
    repo = small_repo(make_repo)
    done = fm("status", str(repo.path))
    assert done.returncode == 2 and "index" in done.stderr


def test_index_help_teaches(fm_home):
    done = fm("index", "--help")
    assert done.returncode == 0 and "--layer" in done.stdout and "crash" in done.stdout


def test_chunks_of_a_branch_git_does_not_know_names_the_known_ones(fm_home, make_repo):
    repo = small_repo(make_repo)
    fm("index", str(repo.path))
    done = fm("chunks", str(repo.path), "-b", "nope")
    assert done.returncode == 2
    assert "no branch 'nope'" in done.stderr and "known: main" in done.stderr
    assert "freshmark index" not in done.stderr  # no advice to index what does not exist


def test_an_empty_listing_of_an_empty_file_says_it_is_empty(fm_home, make_repo):
    repo = small_repo(make_repo)
    repo.write("app/__init__.py", "\n").commit("a package marker")
    fm("index", str(repo.path))
    listed = fm("chunks", str(repo.path), "--path", "app/__init__.py").stderr
    assert "app/__init__.py is not indexed: empty" in listed


def test_an_empty_listing_of_an_excluded_file_names_its_kind(fm_home, make_repo):
    repo = small_repo(make_repo)
    repo.write("src/lexer.c", "/* A lexical scanner generated by flex */\n"
               "/* DO NOT EDIT */\nint yylex(void) { return 0; }\n").commit("generated")
    fm("index", str(repo.path))
    listed = fm("chunks", str(repo.path), "--path", "src/lexer.c").stderr
    assert "its chunks are generated, left out unless --all" in listed
    assert fm("chunks", str(repo.path), "--path", "src/lexer.c", "--all").stdout


def test_an_empty_listing_of_a_binary_file_does_not_call_it_source(fm_home, make_repo):
    repo = small_repo(make_repo)
    repo.write("yargs-logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR").commit("a logo")
    fm("index", str(repo.path))
    listed = fm("chunks", str(repo.path), "--path", "yargs-logo.png").stderr
    assert "yargs-logo.png is not indexed: binary" in listed and "(source)" not in listed


def test_an_empty_listing_of_an_svg_says_it_is_an_image(fm_home, make_repo):
    repo = small_repo(make_repo)
    repo.write("docs/_static/img/logo.svg",
               '<svg xmlns="http://www.w3.org/2000/svg">\n<path d="M0 0h10v10z"/>\n</svg>\n')
    repo.commit("a logo")
    indexed = fm("index", str(repo.path)).stdout
    assert "docs/_static/img/logo.svg (image)" in indexed
    listed = fm("chunks", str(repo.path), "--path", "docs/_static/img/logo.svg").stderr
    assert "logo.svg is not indexed: image" in listed and "(doc)" not in listed


def shadowing_repo(make_repo) -> RepoBuilder:
    """A repository whose top-level package is named like a dependency (chromadb imports
    httpx) and is broken, as after a half-done rename."""
    repo = make_repo("shadow")
    repo.write("httpx/__init__.py", "from ._form import encode_form\n")
    repo.write("httpx/_multipart.py", "def encode_form(data):\n    return data\n")
    repo.commit("move _form")
    return repo


def python_m_freshmark(*args: str, cwd: Path, pythonpath: str = ""
                       ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "freshmark", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def test_python_m_inside_a_repository_imports_installed_dependencies_not_its_packages(
        fm_home, make_repo):
    repo = shadowing_repo(make_repo)
    done = python_m_freshmark("index", "--json", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    done = python_m_freshmark("search", "encode_form", "-k", "1", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    assert "httpx/_multipart.py" in done.stdout


def test_a_dependency_that_fails_to_import_is_a_one_line_error(fm_home, make_repo):
    repo = shadowing_repo(make_repo)
    done = python_m_freshmark("index", cwd=repo.path, pythonpath=str(repo.path))
    assert done.returncode == 1
    assert done.stderr.startswith("freshmark: error: a dependency failed to import: ")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(repo.path / "httpx" / "__init__.py") in done.stderr

"""Hostile files in a real repository, indexed by the real ``freshmark index`` command: each is
that file's problem alone. The rest of the branch is indexed and stamped, and the command
answers with a summary, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from repo_builder import RepoBuilder

from freshmark.adapters.store.chroma import Store
from freshmark.core.settings import Settings

FRESHMARK = str(Path(sys.executable).parent / "freshmark")
# Codecs that turn the text "\ud800" into a lone surrogate, which UTF-8 cannot encode.
SURROGATE_CODECS = ("unicode_escape", "raw_unicode_escape", "utf-7")


def _index_json(repo: RepoBuilder) -> dict:
    done = subprocess.run([FRESHMARK, "index", str(repo.path), "--json"], capture_output=True,
                          text=True, env=dict(os.environ), timeout=600, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def _live_paths(repo: RepoBuilder) -> set[str]:
    index = Store.open(Settings.from_env()).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None and index.manifest.commit == repo.head()
    return {r.path for r in index.iter_records(include_text=False) if r.status == "live"}


def _healthy(repo: RepoBuilder) -> None:
    repo.write("src/orders.py", "def cancel(order):\n    order.cancelled = True\n")
    repo.write("src/" + "a" * 40 + ".py", "def long_name():\n    return 1\n")


def test_a_gitattributes_line_that_can_match_nothing_is_ignored(fm_home, make_repo) -> None:
    repo = make_repo("shop")
    _healthy(repo)
    repo.write(".gitattributes", "[z-a]* linguist-generated\n[a-z linguist-vendored\n")
    repo.write("src/zebra.py", "def stripes():\n    return 2\n")
    repo.commit("attributes git reads its own way")
    _index_json(repo)
    assert {"src/orders.py", "src/zebra.py"} <= _live_paths(repo)


def test_a_coding_line_that_yields_lone_surrogates_is_read_as_utf8(fm_home, make_repo) -> None:
    repo = make_repo("shop")
    _healthy(repo)
    for codec in SURROGATE_CODECS:
        repo.write(f"src/{codec}.py",
                   f"# -*- coding: {codec} -*-\nBAD = '\\ud800'\n\n\ndef {codec}_f():\n"
                   "    return BAD\n")
    repo.commit("hostile coding lines")
    _index_json(repo)
    assert {f"src/{codec}.py" for codec in SURROGATE_CODECS} | {"src/orders.py"} \
        <= _live_paths(repo)


def test_a_file_of_tens_of_thousands_of_functions_is_cut_into_capped_windows(
    fm_home, make_repo
) -> None:
    repo = make_repo("shop")
    _healthy(repo)
    repo.write("src/generated_funcs.py", "".join(f"def f{n}(): pass\n" for n in range(20_000)))
    repo.commit("one function a line")
    summary = _index_json(repo)
    index = Store.open(Settings.from_env()).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None
    chunks = [r for r in index.iter_records(include_text=False)
              if r.path == "src/generated_funcs.py"]
    assert summary["files_chunk_capped"] == 1 and 0 < len(chunks) <= 1000
    assert "src/orders.py" in _live_paths(repo)

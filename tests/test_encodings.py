"""Files in Latin-1 or cp1252 are indexed with their real characters, lines and hashes intact."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_builder import RepoBuilder

from freshmark.core.classify import declared_encoding, decode_text
from freshmark.faces.cli.main import cli

LATIN1_DECLARED = ('# -*- coding: latin-1 -*-\n"""Caf\xe9 rules."""\n\n\n'
                   'def caf\xe9_latin1():\n    return "cr\xe8me br\xfbl\xe9e"\n').encode("latin-1")
CP1252_UNDECLARED = ('def na\xefve_cp1252():\n    return "\u20ac 5 \u2026"\n').encode("cp1252")


def test_a_coding_line_names_the_encoding() -> None:
    assert declared_encoding(b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n") \
        == "iso8859-1"


def test_declared_latin1_is_decoded_as_latin1() -> None:
    assert "def caf\xe9_latin1():" in decode_text(LATIN1_DECLARED)


def test_undeclared_non_utf8_is_decoded_as_cp1252() -> None:
    expected = 'def na\xefve_cp1252():\n    return "\u20ac 5 \u2026"\n'
    assert decode_text(CP1252_UNDECLARED) == expected


def test_utf8_stays_utf8() -> None:
    assert decode_text("caf\xe9 = 1\n".encode()) == "caf\xe9 = 1\n"


def test_a_declared_codec_that_would_move_lines_is_not_used() -> None:
    data = b"# coding: utf-16-le\nx = 1\n"  # no NUL bytes, so not binary; utf-16 would garble it
    assert decode_text(data) == data.decode("ascii")


@pytest.fixture
def shop(make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write("src/latin.py", LATIN1_DECLARED).write("src/windows.py", CP1252_UNDECLARED)
    repo.commit("8-bit files")
    return repo


def _chunks(repo: RepoBuilder) -> dict[str, dict]:
    done = CliRunner().invoke(cli, ["chunks", str(repo.path), "--json"])
    assert done.exit_code == 0, done.output
    return {c["symbol"]: c for c in json.loads(done.stdout)}


@pytest.mark.parametrize(("symbol", "path", "raw", "start_line"), [
    ("caf\xe9_latin1", "src/latin.py", LATIN1_DECLARED, 5),
    ("na\xefve_cp1252", "src/windows.py", CP1252_UNDECLARED, 1),
])
def test_symbols_are_named_from_decoded_text_with_raw_lines_and_hashes(
        fm_home: Path, shop: RepoBuilder, symbol: str, path: str, raw: bytes,
        start_line: int) -> None:
    assert CliRunner().invoke(cli, ["index", str(shop.path)]).exit_code == 0
    chunk = _chunks(shop)[symbol]
    assert chunk["path"] == path and chunk["start_line"] == start_line
    assert chunk["content_sha256"] == hashlib.sha256(raw).hexdigest()


def test_search_finds_the_latin1_function_as_current_and_unreplaced(
        fm_home: Path, shop: RepoBuilder) -> None:
    assert CliRunner().invoke(cli, ["index", str(shop.path)]).exit_code == 0
    done = CliRunner().invoke(cli, ["search", "caf\xe9_latin1", "--repo", str(shop.path),
                                    "--json"])
    assert done.exit_code == 0, done.output
    hit = next(r for r in json.loads(done.stdout)["results"] if r["symbol"] == "caf\xe9_latin1")
    assert hit["verdict"] == "current" and "cr\xe8me br\xfbl\xe9e" in hit["text"]
    assert "\ufffd" not in hit["text"] and "same content as indexed" in hit["citation"]

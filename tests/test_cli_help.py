"""Every command's --help teaches by example."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from freshmark.faces.cli.main import cli


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths.extend(_command_paths(command, (*prefix, name)))
    return paths


@pytest.mark.parametrize("path", _command_paths(cli), ids=" ".join)
def test_help_shows_an_example_of_the_command_itself(path: tuple[str, ...]) -> None:
    done = CliRunner().invoke(cli, [*path, "--help"])
    assert done.exit_code == 0, done.output
    example_lines = done.stdout.split("Examples:", 1)[1].splitlines()
    assert any(line.strip().startswith(f"freshmark {' '.join(path)}") for line in example_lines)


@pytest.mark.parametrize("args", [["index", "a", "b"], ["search"], ["nosuch"],
                                  ["status", "--nope", "."],
                                  ["context", "q", "--repo", ".", "--level", "L9"]])
def test_a_usage_error_is_one_line_with_exit_2(args: list[str]) -> None:
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("freshmark: error: ") and "--help" in done.stderr


def test_double_dash_k_suggests_the_short_k_option_not_kind() -> None:
    done = CliRunner().invoke(cli, ["search", "q", "--repo", ".", "--k", "3"])
    assert "did you mean -k?" in done.stderr and "--kind" not in done.stderr


def test_serve_help_tells_of_the_tokens() -> None:
    done = CliRunner().invoke(cli, ["serve", "--help"])
    assert "FRESHMARK_API_TOKEN" in done.stdout and "FRESHMARK_API_READ_TOKEN" in done.stdout


def test_mcp_help_tells_what_repo_the_tools_take() -> None:
    done = CliRunner().invoke(cli, ["mcp", "--help"])
    assert "repo" in done.stdout and "indexed" in done.stdout


def test_counts_of_one_are_singular() -> None:
    from freshmark.faces.cli.common import counted

    assert (counted(1, "commit"), counted(2, "commit"), counted(0, "file")) == (
        "1 commit", "2 commits", "0 files")


def test_a_bare_group_still_shows_its_help() -> None:
    done = CliRunner().invoke(cli, ["branch"])
    assert "branch [OPTIONS] COMMAND" in done.output and "freshmark: error" not in done.output


def test_python_dash_m_freshmark_is_the_same_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "freshmark", "search", "--help"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "freshmark search" in done.stdout and "Examples:" in done.stdout

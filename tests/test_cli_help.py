"""Every command's --help teaches by example."""

from __future__ import annotations

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

"""The line a result holds a pasted error message on is pointed at, so a bounded answer shows
it (``messages.message_row``, pure; and through search and the CLI on a repository indexed in
the test): a module block holding the message in a constant is not shown by its imports."""

from __future__ import annotations

import json

from click.testing import CliRunner
from search_fixtures import indexed_project

from freshmark.core.messages import message_row, message_windows
from freshmark.faces.cli.main import cli

QUERY = "ValueError: The unit option has been renamed and no longer takes seconds."
# A module block: imports, a table of constants, and the message in a constant near its end.
SETTINGS = ("import os\nimport sys\n\n"
            + "".join(f"LIMIT_{n} = {n} * 60\n" for n in range(20))
            + "RENAMED_UNIT = 'The unit option has been renamed and no longer takes seconds.'\n"
            + "DEFAULT_UNIT = os.environ.get('UNIT', sys.platform)\n")
RAISER = ("from units.settings import RENAMED_UNIT\n\n\n"
          "def parse_unit(options):\n    if 'unit' in options:\n"
          "        raise ValueError(RENAMED_UNIT)\n    return options\n")


def test_the_row_holding_the_message_is_found():
    text = "import os\n\nNAME = 'x'\nMESSAGE = 'The unit option has been renamed.'\n"
    assert message_row(text, message_windows(QUERY)) == 3


def test_a_message_continued_on_the_next_line_is_found_on_its_first():
    text = ("def parse(options):\n    raise ValueError(\n        'The unit option has '\n"
            "        'been renamed and no longer takes seconds.')\n")
    assert message_row(text, ["option has been renamed"]) == 2


def test_a_text_without_the_message_has_no_row():
    assert message_row("def parse(options):\n    return options\n",
                       message_windows(QUERY)) is None
    assert message_row("MESSAGE = 'The unit option has been renamed.'\n", []) is None


def search_json(repo_path: str, *options: str) -> str:
    result = CliRunner().invoke(cli, ["search", QUERY, "--repo", repo_path, "-k", "3",
                                      *options], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_module_block_holding_the_message_is_shown_from_its_line(fm_home, make_repo):
    repo = indexed_project(make_repo("units"), {"units/settings.py": SETTINGS,
                                                "units/parse.py": RAISER}, package="units")
    results = json.loads(search_json(str(repo.path), "--json"))["results"]
    block = next(r for r in results if r["path"] == "units/settings.py")
    assert block["message_at"] == 24
    out = search_json(str(repo.path))
    assert "    ⋮ (21 lines above; L24 holds the message)\n" in out
    assert "    RENAMED_UNIT = 'The unit option has been renamed and no longer takes " \
           "seconds.'\n" in out


def test_a_result_not_holding_the_message_points_at_no_line(fm_home, make_repo):
    repo = indexed_project(make_repo("units"), {"units/settings.py": SETTINGS,
                                                "units/parse.py": RAISER}, package="units")
    results = json.loads(search_json(str(repo.path), "--json"))["results"]
    raiser = [r for r in results if r["symbol"] == "parse_unit"]
    assert raiser and "message_at" not in raiser[0]

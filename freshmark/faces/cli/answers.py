"""The ``check-answer`` command: answers written to the reference contract, checked (seed 004 §9).

One answer (``ANSWER`` with ``--context``) or a folder of them (``ANSWER`` a directory holding
``NAME.answer.md`` beside ``NAME.context.json`` and, optionally, ``NAME.gold.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from freshmark.core.errors import BadInput
from freshmark.faces.api.render import check_lines, summary_lines
from freshmark.faces.cli.common import (
    echo_lines,
    emit_json,
    examples,
    fail_cleanly,
    load_settings,
)

CHECK_EPILOG = """\b
The contract (seed 004): every claim cites [file:Lx-Ly | symbol | high/medium/low]
(an answer to an L1 slice may write [Lx-Ly | symbol | confidence]); missing evidence is
written [MISSING] naming the file or symbol that is needed.
\b
A reference is hallucinated when its lines are not in the slice served or not in the file
at the head; compliant when it has lines with their file, a symbol and a confidence.
\b
Folder mode: NAME.answer.md (or .txt) + NAME.context.json [+ NAME.gold.json, e.g.
{"path": "src/app.py", "start_line": 10, "end_line": 30}] for every answer; prints the
seed's four acceptance figures against their targets: hallucinated references < 5 %,
location accuracy > 90 %, contract compliance > 95 %, [MISSING] precision > 80 %.
\b
Exit codes:
  0  the answer keeps the contract (no hallucinated reference, every reference complete);
     in folder mode: every figure measured meets its target
  1  it does not (the report says which references fail, and why)
  2  bad input: unreadable answer or context, unknown repository or branch
  3  a service is unavailable; retry later
"""
ANSWER_SUFFIXES = (".answer.md", ".answer.txt")
MAX_FILE_BYTES = 4 * 1024 * 1024


def _read_text(path: Path, what: str) -> str:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BadInput(f"{what} {path.name} is over {MAX_FILE_BYTES // 1024 // 1024} MiB")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {what} {path.name}: {exc.__class__.__name__}") from exc


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(_read_text(path, what))
    except json.JSONDecodeError as exc:
        raise BadInput(f"{what} {path.name} is not JSON (line {exc.lineno}): save it with "
                       "`freshmark context … --json`") from exc


@click.command("check-answer", epilog=examples(
    'freshmark context "how is an order cancelled" --repo . --json > ctx.json',
    "freshmark check-answer answer.md --context ctx.json",
    "freshmark check-answer answers/ --json        # a folder: the four acceptance figures",
) + "\n\n" + CHECK_EPILOG)
@click.argument("answer", type=click.Path(exists=True, path_type=Path))
@click.option("--context", "context_file", type=click.Path(dir_okay=False, path_type=Path),
              help="The slice the answer was written from (`freshmark context … --json`).")
@click.option("--gold", "gold_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Where the answer really is (JSON: path, start_line, end_line or symbol; "
                   "or a list of them), for location accuracy.")
@click.option("--repo", default=None,
              help="Repository (default: the one the context names): path or id.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object: refs, hallucinated_refs, compliance, every reference's "
                   "checks and problems, every [MISSING] line (folder mode: the figures).")
@fail_cleanly
def check_answer(answer: Path, context_file: Path | None, gold_file: Path | None,
                 repo: str | None, as_json: bool) -> None:
    """Check an agent's answer against the context slice it was given and the code today."""
    if answer.is_dir():
        if context_file or gold_file:
            raise BadInput("in folder mode each answer's context and gold sit beside it "
                           "(NAME.context.json, NAME.gold.json); drop --context/--gold")
        _check_folder(answer, repo, as_json)
        return
    if context_file is None:
        raise BadInput("--context is required with one answer: the slice it was written from")
    report = _check_one(answer, context_file, gold_file, repo)
    if as_json:
        emit_json(report)
    else:
        echo_lines(check_lines(report))
    sys.exit(0 if report["passed"] else 1)


def _check_one(answer: Path, context_file: Path, gold_file: Path | None,
               repo: str | None) -> dict[str, Any]:
    from freshmark.services.answer_check import AnswerCheckRequest, check_answer

    request = AnswerCheckRequest.build(
        _read_text(answer, "the answer"), _read_json(context_file, "the context"),
        _read_json(gold_file, "the gold") if gold_file else None)
    settings, config = load_settings()
    return check_answer(request, repo, settings=settings, config=config).to_dict()


def _check_folder(folder: Path, repo: str | None, as_json: bool) -> None:
    from freshmark.core.answers import AcceptanceSummary
    from freshmark.services.answer_check import AnswerCheckRequest, check_answer

    settings, config = load_settings()
    summary = AcceptanceSummary()
    answers = sorted(p for p in folder.iterdir() if p.name.endswith(ANSWER_SUFFIXES))
    if not answers:
        raise BadInput(f"no NAME.answer.md or NAME.answer.txt in {folder}")
    for path in answers:
        name = path.name.removesuffix(".md").removesuffix(".txt").removesuffix(".answer")
        context_file = folder / f"{name}.context.json"
        if not context_file.exists():
            raise BadInput(f"{path.name} has no {context_file.name} beside it")
        gold_file = folder / f"{name}.gold.json"
        request = AnswerCheckRequest.build(
            _read_text(path, "the answer"), _read_json(context_file, "the context"),
            _read_json(gold_file, "the gold") if gold_file.exists() else None)
        summary.add(name, check_answer(request, repo, settings=settings, config=config))
    result = summary.to_dict()
    if as_json:
        emit_json(result)
    else:
        echo_lines(summary_lines(result))
    sys.exit(0 if summary.passed else 1)


def register(cli: click.Group) -> None:
    cli.add_command(check_answer)

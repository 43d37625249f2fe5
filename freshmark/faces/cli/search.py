"""The ``search``, ``verify``, ``context`` and ``mcp`` commands (``faces.cli.main`` adds them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, BinaryIO

import click

from freshmark.core.config import Config
from freshmark.core.request import ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.faces.api.render import SHOWN_LINES, files_lines, search_lines, verify_lines
from freshmark.faces.api.shape import shaped
from freshmark.faces.cli.common import (
    echo_lines,
    emit_json,
    examples,
    fail_cleanly,
    load_settings,
    named_branch,
)

REPO_HELP = ("Repository: a path to its working copy, or its id (configured or indexed). "
             "Default: the repository the current directory is in.")
BRANCH_HELP = "Branch (default: the checked-out one)."
WORKTREE_HELP = "Verify against the working tree (uncommitted edits count), not the branch head."

VERIFY_EPILOG = """\b
Input (FILE, or - for stdin), one of:
  path<TAB>sha256-prefix   the seed's snippet list (sha256 of the whole file, 7-64 hex)
  search --json output     or a JSON array of results, or JSON Lines
\b
Answers: current 可用 · older_identical 版本较旧但内容一致 · changed 较旧 ·
         historical 失效 · excluded 排除 · unverifiable 待补 · invalid (line not readable)
\b
Exit codes:
  0  every line may be used as is (current or older_identical)
  1  at least one line is not safe to use as is (changed, historical, excluded,
     unverifiable) or could not be checked (invalid: malformed, or a path leaving the repo)
  2  the command failed: bad input (empty, binary or not a list), unknown repository or branch,
     repository moved or deleted
  3  a service is unavailable; retry later
"""
EXIT_ALL_SAFE = 0
EXIT_NOT_SAFE = 1


def repo_here(repo: str | None) -> str:
    """The repository named, else the working copy the current directory is in (an error
    saying to name one when it is in none)."""
    if repo is not None:
        return repo
    from freshmark.adapters.git.repo import GitRepo
    from freshmark.core.errors import BadInput, NotARepository

    try:
        return str(GitRepo.discover(Path.cwd()).path)
    except NotARepository as exc:
        raise BadInput("the current directory is in no git repository: name one with --repo "
                       "(a path to its working copy, or its id)") from exc


KIND_HELP = ("File kinds to search, comma-separated: source, test, doc, config, other, "
             "changelog, translation (and generated, backup, fixture, vendored). Default: all "
             "but changelogs, translation catalogues and the excluded kinds; the ranking "
             "prefers source over tests over docs.")


@click.command(epilog=examples(
    'freshmark search "where is an order cancelled" --repo .',
    "freshmark search cancel_order --repo shop -k 3 --kind source,test --json",
))
@click.argument("query")
@click.option("--repo", default=None, help=REPO_HELP)
@click.option("--branch", "-b", callback=named_branch,
              help=BRANCH_HELP)
@click.option("-k", "k", type=int, default=5, show_default=True, help="How many results (1-100).")
@click.option("--worktree", is_flag=True, help=WORKTREE_HELP)
@click.option("--history", "include_history", is_flag=True,
              help="Also return tombstoned chunks (deleted code), labelled historical.")
@click.option("--include-excluded", is_flag=True,
              help="Also return generated, backup, fixture and vendored code, labelled excluded.")
@click.option("--kind", "kinds", default=None, metavar="KIND[,KIND...]", help=KIND_HELP)
@click.option("--files", "files", is_flag=True,
              help="Answer with files (which file, not which lines): the k best files, each "
                   "with its best chunks.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object: the index, and per result the stamp fields the "
                   "contract needs plus verdict, reason, citation and the code; fields "
                   "without a value are left out (--full keeps them).")
@click.option("--full", is_flag=True,
              help=f"Everything: every result's whole code (not {SHOWN_LINES} lines), and in "
                   "JSON every field, nulls and ranking diagnostics (explain) included.")
@fail_cleanly
def search(query: str, repo: str | None, files: bool, as_json: bool, full: bool,
           **asked: Any) -> None:
    """Hybrid search; every result verified against the branch head and cited.

    Each result carries a verdict (current, older_identical, changed, historical, excluded,
    unverifiable), the reason, and the three-line citation header to paste with it. For a
    changed file the current lines of the symbol are shown, not the indexed text.
    """
    # The options left in ``asked`` are the request's own: k, kinds, history, branch...
    request = SearchRequest.build(query, **asked)
    repo = repo_here(repo)
    settings, config = load_settings()
    if settings.server_url:  # the store and its client are never imported
        response = _search_on_server(request, repo, files, bool(asked.get("kinds")),
                                     settings, config)
    else:
        from freshmark.services.retrieval.search import search as run_search
        from freshmark.services.retrieval.search import search_files

        run = search_files if files else run_search
        response = run(request, repo, settings=settings, config=config).to_dict()
    if as_json:
        emit_json(shaped(response, full))
    else:
        echo_lines(files_lines(response) if files else search_lines(response, full))


def _search_on_server(request: SearchRequest, repo: str, files: bool, kinds_named: bool,
                      settings: Settings, config: Config) -> dict[str, Any]:
    """The answer of the configured server (every field: the output is shaped here, as for
    a local search)."""
    from freshmark.faces.cli.remote import ask_about

    body = {"query": request.query, "branch": request.branch,
            "k": request.k, "worktree": request.worktree, "history": request.include_history,
            "include_excluded": request.include_excluded,
            "kind": sorted(request.kinds) if kinds_named else None, "full": True}
    return ask_about(repo, settings, config, "/v1/search/files" if files else "/v1/search",
                     body)


@click.command(epilog=examples(
    'freshmark search "cancel order" --repo . --json > hits.json',
    "freshmark verify hits.json --repo .",
    "printf 'src/orders/service.py\\t9f3c1ab2\\n' | freshmark verify - --repo .",
) + "\n\n" + VERIFY_EPILOG)
@click.argument("file", type=click.File("rb"))
@click.option("--repo", default=None, help=REPO_HELP)
@click.option("--branch", "-b", callback=named_branch,
              help="Branch (default: the one saved results were searched on, else the "
                   "checked-out one).")
@click.option("--worktree", is_flag=True, help=WORKTREE_HELP)
@click.option("--json", "as_json", is_flag=True,
              help="A JSON object whose 'lines' hold one object per input line "
                   "(line, path, verdict, reason, ...).")
@fail_cleanly
def verify(file: BinaryIO, repo: str | None, branch: str | None, worktree: bool,
           as_json: bool) -> None:
    """Check a snippet list or saved search results against the code today.

    Malformed lines are reported with their line number; the other lines are still checked.
    Input that is no such list (a source file, say) is refused as a whole (exit 2).
    """
    from freshmark.core.snippets import decode_input, parse_snippets, refuse_other_files
    from freshmark.services.verify_snippets import verify_entries

    entries = parse_snippets(decode_input(file.read()))
    # The API reports such input line by line, as its schema says.
    name = str(getattr(file, "name", "-"))
    refuse_other_files(entries, "input" if name in ("-", "<stdin>") else name)
    repo = repo_here(repo)
    settings, config = load_settings()
    report = verify_entries(entries, repo, settings=settings, config=config, branch=branch,
                            worktree=worktree)
    if as_json:
        emit_json(report.to_dict())
    else:
        echo_lines(verify_lines(report.to_dict()))
    sys.exit(EXIT_ALL_SAFE if report.all_safe else EXIT_NOT_SAFE)


@click.command(epilog=examples(
    'freshmark context "how is an order cancelled twice" --repo . --level l2',
    "freshmark context OrderService.cancel_order --repo shop --budget 2000 --json",
))
@click.argument("query")
@click.option("--repo", default=None, help=REPO_HELP)
@click.option("--branch", "-b", callback=named_branch,
              help=BRANCH_HELP)
@click.option("--level", default="L1", show_default=True,
              type=click.Choice(["L1", "L2", "L3"], case_sensitive=False),
              help="L1 symbol (+imports, types, callers' signatures), L2 module (+direct "
                   "imports), L3 cross-module (files from the symbol graph + call chain).")
@click.option("--budget", type=int, default=None,
              help="Token budget, 300 to 120000 (default L1 4000, L2 20000, L3 60000). "
                   "Estimate: 1 token per 3 ASCII characters, 1 per other character.")
@click.option("--worktree", is_flag=True, help=WORKTREE_HELP)
@click.option("--json", "as_json", is_flag=True,
              help="A JSON object with the sections, the [MISSING] and [LEFT OUT] lines and "
                   "the text.")
@fail_cleanly
def context(query: str, repo: str | None, branch: str | None, level: str, budget: int | None,
            worktree: bool, as_json: bool) -> None:
    """A verified context slice, ready to paste into a prompt.

    Only current and older-but-identical material (and changed material re-read from today's
    file) is evidence; historical material is labelled reference only. Every section carries
    [file:Lx-Ly | symbol | high/medium/low] and its citation header; evidence that is not
    there is named on a [MISSING] line, material that does not fit the budget on a [LEFT OUT]
    line.
    """
    settings, config = load_settings()
    request = ContextRequest.build(query, level=level, budget_tokens=budget, branch=branch,
                                   worktree=worktree)
    repo = repo_here(repo)
    if settings.server_url:
        from freshmark.faces.cli.remote import ask_about

        answer = ask_about(repo, settings, config, "/v1/context", {
            "query": request.query, "branch": request.branch,
            "level": request.level, "budget": request.budget_tokens,
            "worktree": request.worktree})
    else:
        from freshmark.services.context.build import build_context

        answer = build_context(request, repo, settings=settings, config=config).to_dict()
    if as_json:
        emit_json(answer)
    else:
        click.echo(answer["text"], nl=False)


@click.command("mcp", epilog=examples(
    "freshmark mcp",
    'agent config: {"command": "freshmark", "args": ["mcp"]}  # each call names its repo',
    'a tool call: search {"query": "cancel an order", "repo": "shop"}',
))
@fail_cleanly
def mcp_command() -> None:
    """Serve search, verify and context as MCP tools on stdio (for coding agents).

    Every tool takes a required repo argument: the id of a configured repository, or the
    name or path a repository was indexed under (run freshmark index PATH first). No other
    path is opened, and the working directory does not choose the repository.
    """
    from freshmark.faces.mcp.server import run_stdio

    run_stdio()


def register(cli: click.Group) -> None:
    """Add the commands to the ``freshmark`` group."""
    for command in (search, verify, context, mcp_command):
        cli.add_command(command)

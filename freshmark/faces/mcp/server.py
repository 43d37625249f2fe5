"""freshmark as an MCP server: tools ``search``, ``verify`` and ``context`` for coding agents.

``freshmark mcp`` serves them on stdio. ``create_asgi_app()`` gives the Streamable HTTP app
for the cluster server to mount at ``/mcp`` (the endpoint is then ``/mcp/``); a mounted app's
lifespan does not run, so the host runs ``mcp.session_manager.run()`` in its own lifespan
(``faces.http.app`` does). Host and Origin checking (DNS rebinding protection) is always on:
loopback names pass, ``FRESHMARK_ALLOWED_HOSTS`` adds the server's public names
(``faces.api.hosts``). Sessions are bounded (``MAX_SESSIONS`` open at once, beyond it a new one
is refused with 503) and released when the client deletes them or leaves them idle for
``SESSION_IDLE_SECONDS``.

Written against the ``mcp`` SDK's high-level server, ``MCPServer`` (mcp 2.x, which the package
requires; mcp 1.x called it ``FastMCP``, and mcp 2's ``mcp.server.fastmcp`` only raises an error
naming the rename). Tool errors come back as MCP tool errors with freshmark's one-line message,
so an agent can read what to fix, passed through ``core.redact.public_message`` like every
HTTP error (no secret, no host path). Each argument carries a description and the bounds the server
enforces; each tool declares an output schema (the HTTP answers' models); the server reports the
package version.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypeVar

from mcp.server.mcpserver import MCPServer as _Server
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BeforeValidator, Field, WithJsonSchema

from freshmark import __version__
from freshmark.core.config import Config, load_config
from freshmark.core.errors import FreshmarkError
from freshmark.core.redact import public_message
from freshmark.core.request import ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.faces.api.hosts import allowed_hosts, allowed_origins
from freshmark.faces.api.models import (
    CheckAnswerResponseModel,
    ContextResponseModel,
    FilesResponseModel,
    GoldLocationModel,
    SearchResponseModel,
    ServedContextModel,
    VerifyResponseModel,
)
from freshmark.faces.api.render import check_lines, files_lines, search_lines, verify_lines
from freshmark.faces.api.schema import (
    MAX_K,
    AnswerText,
    BudgetTokens,
    FileKind,
    LevelName,
    QueryText,
    RepoName,
    VerifyContent,
    not_a_boolean,
)
from freshmark.faces.api.served import check_budget, check_verify_lines, no_host_paths, served_repo
from freshmark.faces.api.shape import shaped
from freshmark.services.repos import RepoHandle

T = TypeVar("T")
log = logging.getLogger("freshmark.mcp")
# An agent holds one session per conversation; a hundred is many machines' worth, and each
# costs a task and its buffers until deleted or idle.
MAX_SESSIONS = 100
SESSION_IDLE_SECONDS = 600.0
INSTRUCTIONS = (
    "freshmark searches a version-stamped code index and verifies every result against the "
    "current code. Each result has a verdict: current or older_identical = use as is with its "
    "citation header; changed = use the current lines given, not the indexed text; historical "
    "= design ideas only, never implement against it; excluded = generated/backup/fixture/"
    "vendored, keep out of context; unverifiable = a clue, not evidence. Paste the citation "
    "header with every snippet. 'context' returns a slice ready for a prompt: cite claims as "
    "[file:Lx-Ly | symbol | high/medium/low] and answer [MISSING] when evidence is absent; "
    "[LEFT OUT] lines name code that exists but did not fit the budget (ask with a larger one)."
)


# A tool answers with its use case's ``to_dict()`` as structured content and, as its text
# content, that answer rendered for reading (``faces.api.render``): a client hands a model the
# text, and the SDK's default text, the JSON again, would make it read every result twice. The
# return annotation names the model of the dict (``freshmark.faces.api.models``, the HTTP
# answers' models too): the SDK publishes it as the tool's outputSchema and validates the
# structured content against it. The type checker is told what the tools return.
if TYPE_CHECKING:
    SearchAnswer: TypeAlias = CallToolResult
    FilesAnswer: TypeAlias = CallToolResult
    VerifyAnswer: TypeAlias = CallToolResult
    ContextAnswer: TypeAlias = CallToolResult
    CheckAnswerAnswer: TypeAlias = CallToolResult
else:
    SearchAnswer = Annotated[CallToolResult, SearchResponseModel]
    FilesAnswer = Annotated[CallToolResult, FilesResponseModel]
    VerifyAnswer = Annotated[CallToolResult, VerifyResponseModel]
    ContextAnswer = Annotated[CallToolResult, ContextResponseModel]
    CheckAnswerAnswer = Annotated[CallToolResult, CheckAnswerResponseModel]


def _answer(structured: dict[str, Any], lines: list[str]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="\n".join(lines) + "\n")],
                          structured_content=structured)


def _run(call: Callable[[], T]) -> T:
    try:
        return call()
    except FreshmarkError as exc:
        raise ToolError(public_message(f"{type(exc).__name__}: {exc}")) from exc
    except Exception as exc:  # a defect: the SDK would put its text, unredacted, in the answer
        log.exception("tool call failed")
        raise ToolError(public_message(f"internal error ({type(exc).__name__}); the server "
                                       "log has the details")) from exc


def _served(repo: str, settings: Settings, config: Config, worktree: bool) -> RepoHandle:
    """The repository a tool call names, by what this server knows (never any host path)."""
    from freshmark.services.open_branch import store_for

    return served_repo(repo, settings=settings, config=config, store=store_for(settings),
                       worktree=worktree)


# Per-argument descriptions and bounds: the inputSchema an agent sees. Bounds on text describe
# the server's own checks (``faces.api.schema``), so a refusal keeps freshmark's wording.
Query = Annotated[QueryText, Field(description=(
    "Words, a question, symbol names or a whole issue report: not blank, no NUL (the limit is "
    "100,000 UTF-8 bytes; the schema says 25,000 characters, which never exceed it)."))]
Repo = Annotated[RepoName, Field(description=(
    "The repository id, or the name or path it was indexed under (never another path on the "
    "server); at most 256 characters, no control characters."))]
Branch = Annotated[str | None, Field(description="Branch; default: the one checked out.")]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"How many results, 1 to {MAX_K}."),
              BeforeValidator(not_a_boolean)]
Worktree = Annotated[bool, Field(description=(
    "Verify against the working tree (uncommitted edits count, tracked files only) instead of "
    "the branch head; registered working copies only, with no other branch named."))]
History = Annotated[bool, Field(description="Also return deleted code, labelled historical.")]
IncludeExcluded = Annotated[bool, Field(description=(
    "Also return generated, backup, fixture and vendored code, labelled excluded."))]
Kinds = Annotated[list[FileKind] | None, Field(max_length=16, description=(
    "File kinds to search (source, test, doc, config, other, changelog, translation; the "
    "excluded kinds with include_excluded). Default: all but changelogs and translations, "
    "source ranked first."))]
Content = Annotated[VerifyContent, Field(description=(
    "Lines of 'path<TAB>sha256 prefix of the file' (at most 2,000), or search results as "
    "JSON; no NUL, the first line not a # comment."))]
Full = Annotated[bool, Field(description=(
    "The full answer: every field of every result, nulls and ranking diagnostics (explain) "
    "included. Default: compact, the mandatory stamp fields and the verification always, "
    "other fields only when they hold a value."))]
Budget = Annotated[BudgetTokens | None, Field(description=(
    "Token budget, 300 to 120,000 (default by level: 4000, 20000, 60000); 1 token is about "
    "3 characters."))]


# An MCP tool's parameters are its input schema, flat by the protocol; they become one
# validated SearchRequest at once (hence more than the usual eight).
def search(query: Query, repo: Repo, branch: Branch = None, k: K = 5,  # noqa: PLR0913
           worktree: Worktree = False, history: History = False,
           include_excluded: IncludeExcluded = False,
           kind: Kinds = None, full: Full = False) -> SearchAnswer:
    """Hybrid code search; every result verified against the branch head and cited.

    query: words, a question, symbol names or a whole issue report. repo: the repository id,
    or the name or path it was indexed under. branch: default the checked-out one. k: 1-100
    results. worktree: verify against uncommitted edits (registered working copies, tracked
    files). history: include deleted code (labelled historical).
    include_excluded: include generated/backup/fixture/vendored code (labelled excluded).
    kind: file kinds to search (source, test, doc, config, other, changelog, translation);
    default all but changelogs and translations, source ranked first.
    full: every field of every result, nulls and ranking diagnostics included.
    Each result: the mandatory stamp fields, verdict, reason, citation (three header lines),
    text; other fields only when they hold a value (unless full).
    """
    from freshmark.services.retrieval.search import search as run_search

    return _searched(run_search, repo, full, lambda: SearchRequest.build(
        query, k=k, kinds=kind, include_history=history, include_excluded=include_excluded,
        branch=branch, worktree=worktree), lambda answer: search_lines(answer, full))


def search_files(query: Query, repo: Repo, branch: Branch = None,  # noqa: PLR0913
                 k: K = 5, worktree: Worktree = False, history: History = False,
                 include_excluded: IncludeExcluded = False,
                 kind: Kinds = None, full: Full = False) -> FilesAnswer:
    """Which files: the k best files for the query, each with its best chunks verified and
    cited. Arguments as for search."""
    from freshmark.services.retrieval.search import search_files as run_search_files

    return _searched(run_search_files, repo, full, lambda: SearchRequest.build(
        query, k=k, kinds=kind, include_history=history, include_excluded=include_excluded,
        branch=branch, worktree=worktree), files_lines)


def _searched(run_search: Callable[..., Any], repo: str, full: bool,
              build_request: Callable[[], SearchRequest],
              render: Callable[[dict[str, Any]], list[str]]) -> CallToolResult:
    """A chunk or file search for an MCP caller: the request checked before the repository,
    which must be a served one, and no host path in any answer; compact unless ``full``."""

    def call() -> CallToolResult:
        request = build_request()  # bad input is reported before the repo is looked up
        settings = Settings.from_env()
        config = load_config(settings.config_path)
        handle = _served(repo, settings, config, request.worktree)
        with no_host_paths(handle):
            answer = run_search(request, handle, settings=settings, config=config).to_dict()
        return _answer(shaped(answer, full), render(answer))

    return _run(call)


def verify(content: Content, repo: Repo, branch: Branch = None,
           worktree: Worktree = False) -> VerifyAnswer:
    """Verify snippets against the code today.

    content: lines of 'path<TAB>sha256 prefix of the file', or search results as JSON.
    Returns one entry per input line (line, path, verdict, reason, seed_word, citation) and
    'safe': true only if every line may be used as is. Malformed lines are 'invalid'.
    """
    from freshmark.core.snippets import check_text, parse_snippets
    from freshmark.services.verify_snippets import verify_entries

    def call() -> CallToolResult:
        check_verify_lines(content)
        settings = Settings.from_env()
        config = load_config(settings.config_path)
        handle = _served(repo, settings, config, worktree)
        with no_host_paths(handle):
            entries = parse_snippets(check_text(content))
            report = verify_entries(entries, handle, settings=settings, config=config,
                                    branch=branch, worktree=worktree).to_dict()
        return _answer(report, verify_lines(report))

    return _run(call)


def _upper_level(value: object) -> object:
    """``l2`` is ``L2``: levels are accepted in any case (as by the CLI and the HTTP API)."""
    return value.strip().upper() if isinstance(value, str) else value


ContextLevel = Annotated[Literal["L1", "L2", "L3"], BeforeValidator(_upper_level),
                         WithJsonSchema(LevelName.__metadata__[0].json_schema),
                         Field(description="L1 symbol, L2 module, L3 cross-module; any case "
                                           "(l2 is L2).")]


def context(query: Query, repo: Repo, level: ContextLevel = "L1",
            budget: Budget = None, branch: Branch = None,
            worktree: Worktree = False) -> ContextAnswer:
    """A verified context slice for a question, ready to paste into a prompt ('text').

    level: L1 symbol (+imports, types, callers' signatures), L2 module (+direct imports),
    L3 cross-module (symbol graph + call chain). budget: tokens (default 4000/20000/60000).
    Only verified code is evidence; historical code is labelled reference only; evidence
    not found is listed as [MISSING] lines, what the budget left out as [LEFT OUT] lines.
    """
    from freshmark.services.context.build import build_context

    def call() -> CallToolResult:
        check_budget(budget)
        request = ContextRequest.build(query, level=level, budget_tokens=budget, branch=branch,
                                       worktree=worktree)
        settings = Settings.from_env()
        config = load_config(settings.config_path)
        handle = _served(repo, settings, config, worktree)
        with no_host_paths(handle):
            answer = build_context(request, handle, settings=settings, config=config).to_dict()
        return _answer(answer, answer["text"].splitlines())

    return _run(call)


Answer = Annotated[AnswerText, Field(description=(
    "The answer as written: references [file:Lx-Ly | symbol | high/medium/low] and "
    "[MISSING] lines."))]
ContextJson = Annotated[ServedContextModel, Field(description=(
    "The slice the answer was written from, as the context tool returned it."))]
Gold = Annotated[list[GoldLocationModel] | None, Field(max_length=50, description=(
    "Where the answer really is (path, start_line, end_line or symbol), for location "
    "accuracy."))]


def check_answer(answer: Answer, context: ContextJson, gold: Gold = None) -> CheckAnswerAnswer:
    """Check an answer written from a context slice against the reference contract.

    Every [file:Lx-Ly | symbol | confidence] must lie inside the slice served and exist at
    the head ('hallucinated' otherwise) and have all three parts ('compliant'); every
    [MISSING] line should name a file or symbol that exists. 'passed' gates the answer.
    """
    from freshmark.services.answer_check import AnswerCheckRequest
    from freshmark.services.answer_check import check_answer as run_check

    def call() -> CallToolResult:
        golds = [g.model_dump() for g in gold] if gold else None
        request = AnswerCheckRequest.build(answer, context.model_dump(), golds)
        settings = Settings.from_env()
        config = load_config(settings.config_path)
        handle = _served(request.served.repo, settings, config, request.served.worktree)
        with no_host_paths(handle):
            report = run_check(request, handle, settings=settings, config=config).to_dict()
        return _answer(report, check_lines(report))

    return _run(call)


class _StrictServer(_Server):
    """A tool call names only the tool's own arguments: a misspelt one (``top_k`` for ``k``) is
    an error naming it, as the HTTP routes refuse it, not silently dropped."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        tools = {tool.name: tool for tool in await self.list_tools()}
        if name in tools:
            known = set(tools[name].input_schema.get("properties", {}))
            unknown = sorted(str(key)[:40] for key in (arguments or {}) if key not in known)
            if unknown:
                raise ToolError(f"BadInput: unknown argument {', '.join(map(repr, unknown[:5]))}"
                                f"; {name} takes {', '.join(sorted(known))}")
        return await super().call_tool(name, arguments, context)


def build_server() -> Any:
    """A new MCP server with its tools (search, search_files, verify, context, check_answer).

    The SDK calls ``logging.basicConfig`` when a server is built; that is undone here, so that
    importing this module never configures the logging of the process hosting it.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server = _StrictServer(name="freshmark", version=__version__, instructions=INSTRUCTIONS)
    root.handlers[:] = handlers
    root.setLevel(level)
    for tool in (search, search_files, verify, context, check_answer):
        server.add_tool(tool)
    return server


mcp = build_server()


def _transport_security(hosts: list[str]) -> Any | None:
    """DNS rebinding protection, always on: a browser page cannot reach the tools through a
    hostile name that resolves to this server, since Host and Origin must be on the list."""
    try:
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError:  # pragma: no cover - older SDKs
        return None
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=allowed_origins(hosts))


def create_asgi_app(server: Any | None = None, path: str = "/",
                    hosts: list[str] | None = None, max_sessions: int = MAX_SESSIONS,
                    session_idle_seconds: float = SESSION_IDLE_SECONDS) -> Any:
    """The Streamable HTTP app of ``server`` (default: the module's ``mcp``) answering at
    ``path``. Mounted at ``/mcp`` with the default path, the endpoint is ``/mcp/`` (Starlette
    redirects ``/mcp`` there, which MCP clients do not follow); to answer at ``/mcp`` itself,
    pass ``path="/mcp"`` and mount the app at ``""`` after every other route. Either way run
    ``server.session_manager.run()`` in the host's lifespan. ``hosts``: the allowed Host
    values (default ``allowed_hosts(os.environ)``); ``max_sessions`` open at once, each released
    when deleted or after ``session_idle_seconds`` without a request."""
    server = server or mcp
    security = _transport_security(hosts if hosts is not None else allowed_hosts(os.environ))
    try:
        return server.streamable_http_app(streamable_http_path=path,
                                          transport_security=security,
                                          max_sessions=max_sessions,
                                          session_idle_timeout=session_idle_seconds)
    except TypeError:  # mcp 1.x takes its options from settings
        server.settings.streamable_http_path = path
        return server.streamable_http_app()


def run_stdio() -> None:
    """Serve the tools on stdin/stdout until the client disconnects."""
    from freshmark.adapters.store.shard import import_client_library

    import_client_library(Settings.from_env())  # at start, not in the first tool call's time
    mcp.run("stdio")

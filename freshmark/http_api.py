"""Verified retrieval over HTTP: POST /v1/search, /v1/verify, /v1/context (``router``).

The server includes ``router`` in its FastAPI app; the pydantic models below make the OpenAPI
description (``/openapi.json``) say exactly what each answer holds. Errors come back as
``{"detail": {"error": <type>, "message": <one line>}}``: 400 bad input (empty or over-long
query, bad budget, unsafe path, malformed list), 404 unknown or never-indexed repository or
branch, or a repository moved or deleted since indexing, 409 a state the caller must fix
first (detached HEAD, embedder mismatch), 503 a service is down (retry). Handlers are plain
``def``: FastAPI runs them in its thread pool, since git and Chroma calls block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator, Field

from freshmark.config import Config, load_config
from freshmark.errors import (
    BadInput,
    BranchNotFound,
    FreshmarkError,
    NotARepository,
    NotIndexed,
    RepositoryGone,
    RetryableError,
    UnsafePath,
)
from freshmark.repos import RepoHandle
from freshmark.served import check_budget, check_verify_lines, no_host_paths, served_repo
from freshmark.settings import Settings

T = TypeVar("T")
VerdictName = Literal["current", "older_identical", "changed", "historical", "excluded",
                      "unverifiable"]
REPO_FIELD = Field(description="The repository's id (configured), or the name, key or path it "
                               "was indexed under; never any other path on the server.",
                   examples=["shop"])
BRANCH_FIELD = Field(None, description="Branch; default: the one checked out.")
WORKTREE_FIELD = Field(False, description="Verify against the working tree (uncommitted edits "
                                          "count, tracked files only) instead of the branch "
                                          "head; for registered working copies only.")


class ErrorDetail(BaseModel):
    error: str = Field(description="Error type, e.g. BadInput, NotIndexed, RepositoryGone.")
    message: str = Field(description="What is wrong and what to do, in one line.")


class ErrorBody(BaseModel):
    detail: ErrorDetail


class TargetInfo(BaseModel):
    branch: str
    head: str = Field(description="Commit the results were verified against.")
    worktree: bool


class IndexInfo(BaseModel):
    """The index an answer came from."""

    collection: str
    repo: str
    branch: str
    commit: str | None = Field(description="Commit every layer is indexed at (None while the "
                                           "layers differ; see ``layers``).")
    indexed_at: str | None = Field(description="Build time of that commit (UTC).")
    layers: dict[str, dict[str, str]] = Field(
        description="Per layer: the commit it was last built at and when.")
    embedder: str
    generation: int


class VerifiedResultModel(BaseModel):
    """One result: the SPEC §1 stamp fields under their names, plus the verification."""

    repo: str
    branch: str
    commit: str
    path: str
    symbol: str
    start_line: int
    end_line: int
    indexed_at: str
    blob_sha: str
    content_sha256: str
    kind: str
    language: str
    signature: str
    file_kind: str
    layer: str
    status: str
    tombstoned_in: str | None
    tombstoned_at: str | None
    successor: str | None
    verdict: VerdictName
    seed_word: str = Field(description="The seed's word for the verdict (可用, 较旧, 失效...).")
    reason: str
    action: str = Field(description="What the caller does with this verdict.")
    citation: str = Field(description="The three-line citation header (source, version, "
                                      "check or use), to paste above the text.")
    current_start_line: int | None = Field(description="For changed: the symbol's lines today.")
    current_end_line: int | None
    text: str = Field(description="The code: today's lines for changed, else the chunk.")
    rank: int
    score: float | None
    explain: dict[str, Any]


KIND_FIELD = Field(None, description="File kinds to search: source, test, doc, config, other, "
                                     "changelog, translation (generated, backup, fixture, "
                                     "vendored with include_excluded). Default: all but "
                                     "changelogs and translations; source is ranked first.",
                   max_length=16)


class SearchRequest(BaseModel):
    query: str = Field(description="Words, a question, symbol names or a whole issue report "
                                   "(at most 100,000 bytes).",
                       examples=["cancel order idempotency"])
    repo: str = REPO_FIELD
    branch: str | None = BRANCH_FIELD
    k: int = Field(5, ge=1, le=100, description="How many results.")
    worktree: bool = WORKTREE_FIELD
    history: bool = Field(False, description="Also return tombstoned (deleted) code, "
                                             "labelled historical.")
    include_excluded: bool = Field(False, description="Also return generated, backup, fixture "
                                                      "and vendored code, labelled excluded.")
    kind: list[str] | None = KIND_FIELD


class FileResultModel(BaseModel):
    """One file of a file answer; its verdict and citation are its best chunk's."""

    rank: int
    path: str
    file_kind: str
    score: float
    verdict: VerdictName
    citation: str
    chunks: list[VerifiedResultModel]


class FilesResponseModel(BaseModel):
    query: str
    repo: str
    target: TargetInfo
    index: IndexInfo
    files: list[FileResultModel]
    timings: dict[str, float] = Field(description="Seconds per stage.")


class SearchResponseModel(BaseModel):
    query: str
    repo: str
    target: TargetInfo
    index: IndexInfo
    results: list[VerifiedResultModel]
    verdicts: dict[str, int]
    timings: dict[str, float] = Field(description="Seconds per stage.")


class VerifyRequest(BaseModel):
    content: str = Field(description="A snippet list (path<TAB>sha256-prefix per line) or "
                                     "search results as JSON.",
                         examples=["src/orders/services/order_service.py\t4a91c0f7d2e8"])
    repo: str = REPO_FIELD
    branch: str | None = BRANCH_FIELD
    worktree: bool = WORKTREE_FIELD


class VerifyLineModel(BaseModel):
    line: int = Field(description="1-based input line the entry starts on.")
    path: str
    verdict: VerdictName | Literal["invalid"] = Field(
        description="'invalid' when the line could not be checked (malformed, unsafe path).")
    reason: str
    source_format: Literal["tsv", "json"]
    seed_word: str | None
    symbol: str | None
    citation: str | None
    current_start_line: int | None
    current_end_line: int | None


class VerifyResponseModel(BaseModel):
    repo: str
    target: TargetInfo
    lines: list[VerifyLineModel]
    verdicts: dict[str, int]
    safe: bool = Field(description="True only if every line may be used as is.")


def upper_level(value: object) -> object:
    """``l2`` is ``L2``: levels are accepted in any case, as on the command line."""
    return value.strip().upper() if isinstance(value, str) else value


ContextLevel = Annotated[Literal["L1", "L2", "L3"], BeforeValidator(upper_level)]


class ContextRequest(BaseModel):
    query: str = Field(examples=["how is an order cancelled twice"])
    repo: str = REPO_FIELD
    branch: str | None = BRANCH_FIELD
    level: ContextLevel = Field("L1", description="L1 symbol, L2 module, L3 cross-module "
                                                  "(any case: l2 is L2).")
    budget: int | None = Field(None, description="Token budget (default by level: 4000, 20000, "
                                                 "60000; 300 at least). 1 token ≈ 3 characters.")
    worktree: bool = WORKTREE_FIELD


class ContextSectionModel(BaseModel):
    role: str = Field(description="evidence, imports, type, module, dependency, caller, "
                                  "related, call_chain, candidate or reference.")
    path: str
    symbol: str
    start_line: int
    end_line: int
    confidence: Literal["high", "medium", "low"]
    verdict: str | None
    anchor: str = Field(description="[file:Lx-Ly | symbol | confidence]")
    note: str
    citation: str | None
    text: str


class ContextResponseModel(BaseModel):
    query: str
    level: str
    budget_tokens: int
    used_tokens: int
    target: TargetInfo
    index: IndexInfo
    sections: list[ContextSectionModel]
    missing: list[str] = Field(description="[MISSING] lines: evidence not there, or left out "
                                           "by the budget.")
    text: str = Field(description="The slice, ready to paste into a prompt.")


# -- plumbing -------------------------------------------------------------------------------------
def get_settings() -> Settings:
    """Settings per request (overridable in tests through ``dependency_overrides``)."""
    return Settings.from_env()


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_config(settings: SettingsDep) -> Config:
    return load_config(settings.config_path)


ConfigDep = Annotated[Config, Depends(get_config)]


def _status_for(exc: FreshmarkError) -> int:
    if isinstance(exc, BadInput | UnsafePath):
        return 400
    if isinstance(exc, NotIndexed | RepositoryGone | BranchNotFound | NotARepository):
        return 404
    if isinstance(exc, RetryableError):
        return 503
    return 409


def answer(call: Callable[[], T]) -> T:
    """Run a use case; freshmark errors become HTTP errors with a one-line message."""
    try:
        return call()
    except FreshmarkError as exc:
        raise HTTPException(_status_for(exc),
                            detail={"error": type(exc).__name__, "message": str(exc)}) from exc


def _served(repo: str, settings: Settings, config: Config, worktree: bool) -> RepoHandle:
    """The repository a request names, by what this server knows (never any host path)."""
    from freshmark.search import store_for

    return served_repo(repo, settings=settings, config=config, store=store_for(settings),
                       worktree=worktree)


def _first_error(exc: RequestValidationError) -> str:
    """One line about the first invalid field, without echoing the input (it may not even be
    text: a non-UTF-8 body cannot be put into JSON)."""
    errors = exc.errors()
    if not errors:
        return "request does not match the schema"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}"[:300]


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": {"error": "BadInput", "message": _first_error(exc)}},
                        status_code=422)


def install_error_handlers(app: FastAPI) -> None:
    """Validation errors as freshmark's one-line errors (422), never an echo of the body."""
    app.add_exception_handler(RequestValidationError, _validation_error)


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text} for code, text in (
        (400, "Bad input: query, budget, path or list"),
        (404, "Repository or branch unknown, never indexed, moved or deleted"),
        (409, "A state to fix first (detached HEAD, embedder mismatch)"),
        (503, "A service is unavailable; retry"),
    )
}

router = APIRouter(prefix="/v1", tags=["verified retrieval"])


@router.post("/search", response_model=SearchResponseModel, responses=ERRORS,
             summary="Hybrid search, every result verified and cited")
def search_endpoint(request: SearchRequest, settings: SettingsDep,
                    config: ConfigDep) -> dict[str, Any]:
    from freshmark.retrieval import validate_query
    from freshmark.search import search

    def run() -> dict[str, Any]:
        query = validate_query(request.query)  # a bad query is reported before the repo
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            return search(
                query, repo, settings=settings, config=config, branch=request.branch,
                k=request.k, worktree=request.worktree, include_history=request.history,
                include_excluded=request.include_excluded, kinds=request.kind).to_dict()

    return answer(run)


@router.post("/search/files", response_model=FilesResponseModel, responses=ERRORS,
             summary="Which files: the best files, each with its best chunks verified")
def search_files_endpoint(request: SearchRequest, settings: SettingsDep,
                          config: ConfigDep) -> dict[str, Any]:
    from freshmark.retrieval import validate_query
    from freshmark.search import search_files

    def run() -> dict[str, Any]:
        query = validate_query(request.query)
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            return search_files(
                query, repo, settings=settings, config=config, branch=request.branch,
                k=request.k, worktree=request.worktree, include_history=request.history,
                include_excluded=request.include_excluded, kinds=request.kind).to_dict()

    return answer(run)


@router.post("/verify", response_model=VerifyResponseModel, responses=ERRORS,
             summary="Verify a snippet list or saved results against the code today")
def verify_endpoint(request: VerifyRequest, settings: SettingsDep,
                    config: ConfigDep) -> dict[str, Any]:
    from freshmark.search import verify_snippets

    def run() -> dict[str, Any]:
        check_verify_lines(request.content)
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            return verify_snippets(request.content, repo, settings=settings, config=config,
                                   branch=request.branch, worktree=request.worktree).to_dict()

    return answer(run)


@router.post("/context", response_model=ContextResponseModel, responses=ERRORS,
             summary="A verified context slice with the reference contract")
def context_endpoint(request: ContextRequest, settings: SettingsDep,
                     config: ConfigDep) -> dict[str, Any]:
    from freshmark.context import build_context
    from freshmark.retrieval import validate_query

    def run() -> dict[str, Any]:
        query = validate_query(request.query)
        check_budget(request.budget)
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            return build_context(
                query, repo, settings=settings, config=config, level=request.level,
                budget_tokens=request.budget, branch=request.branch,
                worktree=request.worktree).to_dict()

    return answer(run)

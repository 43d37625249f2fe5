"""Verified retrieval over HTTP: POST /v1/search, /v1/verify, /v1/context (``router``).

The server includes ``router`` in its FastAPI app; the pydantic models below make the OpenAPI
description (``/openapi.json``) say exactly what each answer holds. Errors come back as
``{"detail": {"error": <type>, "message": <one line>}}``: 400 bad input (empty or over-long
query, bad budget, unsafe path, malformed list), 401/403 no or wrong token, 404 unknown or
never-indexed repository or branch, or a repository moved or deleted since indexing, 408/413
a body too slow or too large, 409 a state the caller must fix first (detached HEAD, embedder
mismatch), 415 a body not declared as JSON, 421 a foreign Host on a server that asks for no
token, 422 a body that is not JSON or not of the schema, 503 a service is down (retry).
Input bounds in the schema are those the server enforces (``faces.api.schema``). Handlers
are plain ``def``: FastAPI runs them in its thread pool, since git and Chroma calls block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from freshmark.core.config import Config, load_config
from freshmark.core.errors import (
    BadInput,
    BranchNotFound,
    FreshmarkError,
    NotARepository,
    NotIndexed,
    RepositoryGone,
    RetryableError,
    UnsafePath,
)
from freshmark.core.redact import public_message
from freshmark.core.settings import Settings
from freshmark.faces.api.models import (
    CheckAnswerRequest,
    CheckAnswerResponseModel,
    ContextRequest,
    ContextResponseModel,
    ErrorBody,
    FilesResponseModel,
    SearchRequest,
    SearchResponseModel,
    VerifyRequest,
    VerifyResponseModel,
)
from freshmark.faces.api.served import check_budget, check_verify_lines, no_host_paths, served_repo
from freshmark.faces.api.shape import shaped
from freshmark.services.repos import RepoHandle

T = TypeVar("T")
__all__ = ["ErrorBody", "router", "install_error_handlers"]


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
    """Run a use case; freshmark errors become HTTP errors with a one-line message that holds
    no secret (a Chroma URL's credentials) and no host path (``core.redact.public_message``)."""
    try:
        return call()
    except FreshmarkError as exc:
        raise HTTPException(_status_for(exc), detail={
            "error": type(exc).__name__, "message": public_message(str(exc))}) from exc


def _served(repo: str, settings: Settings, config: Config, worktree: bool) -> RepoHandle:
    """The repository a request names, by what this server knows (never any host path)."""
    from freshmark.services.open_branch import store_for

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


# FastAPI's and Starlette's own refusals (a body that cannot be decoded, an unknown route, a
# wrong method) carry a bare string detail; named here so they take freshmark's error shape.
_HTTP_ERROR_NAMES = {400: "BadInput", 404: "NotFound", 405: "MethodNotAllowed"}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail: object = exc.detail  # FastAPI's HTTPException (a subclass) carries any detail
    if not (isinstance(detail, dict) and {"error", "message"} <= set(detail)):
        detail = {"error": _HTTP_ERROR_NAMES.get(exc.status_code, "HTTPError"),
                  "message": public_message(str(detail))[:300]}
    return JSONResponse({"detail": detail}, status_code=exc.status_code,
                        headers=getattr(exc, "headers", None))


def install_error_handlers(app: FastAPI) -> None:
    """Validation errors as freshmark's one-line errors (422), never an echo of the body; every
    other HTTP error in the same ``{"detail": {"error", "message"}}`` shape."""
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


# Every answer an API route can give besides 200, each with the body it really has. 401/403
# come from ``faces.http.auth`` and 408/413 from ``faces.http.limits`` (before any handler);
# 422 is FastAPI's validation error in freshmark's shape (``install_error_handlers``), which
# replaces FastAPI's default 422 description.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text} for code, text in (
        (400, "Bad input: query, budget, path or list (or a malformed Content-Length, or a "
              "lone surrogate escape, which is not Unicode)"),
        (401, "Missing or wrong bearer token"),
        (403, "No API token configured on a server reachable from other machines"),
        (404, "Repository or branch unknown, never indexed, moved or deleted"),
        (408, "The request body did not arrive in time"),
        (409, "A state to fix first (detached HEAD, embedder mismatch)"),
        (413, "The request body is larger than the API body cap"),
        (415, "The body is not declared as JSON (Content-Type: application/json)"),
        (421, "No token is required (loopback only) and the Host header is not a loopback "
              "name or one of $FRESHMARK_ALLOWED_HOSTS"),
        (422, "The body is not JSON or does not match the request schema"),
        (503, "A service is unavailable; retry"),
    )
}

router = APIRouter(prefix="/v1", tags=["verified retrieval"])


@router.post("/search", response_model=SearchResponseModel, responses=ERRORS,
             summary="Hybrid search, every result verified and cited")
def search_endpoint(request: SearchRequest, settings: SettingsDep,
                    config: ConfigDep) -> dict[str, Any]:
    from freshmark.services.retrieval.search import search

    return _answer_search(search, request, settings, config)


@router.post("/search/files", response_model=FilesResponseModel, responses=ERRORS,
             summary="Which files: the best files, each with its best chunks verified")
def search_files_endpoint(request: SearchRequest, settings: SettingsDep,
                          config: ConfigDep) -> dict[str, Any]:
    from freshmark.services.retrieval.search import search_files

    return _answer_search(search_files, request, settings, config)


def _answer_search(run_search: Callable[..., Any], request: SearchRequest, settings: Settings,
                   config: Config) -> dict[str, Any]:
    """A chunk or file search for a network caller: the request checked before the
    repository, which must be a served one, and no host path in any answer; compact unless
    the request asks for ``full``."""

    def run() -> dict[str, Any]:
        search_request = request.to_request()  # bad input is reported before the repo
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            found = run_search(search_request, repo, settings=settings, config=config)
        return shaped(found.to_dict(), request.full)

    return answer(run)


@router.post("/verify", response_model=VerifyResponseModel, responses=ERRORS,
             summary="Verify a snippet list or saved results against the code today")
def verify_endpoint(request: VerifyRequest, settings: SettingsDep,
                    config: ConfigDep) -> dict[str, Any]:
    from freshmark.core.snippets import check_text, parse_snippets
    from freshmark.services.verify_snippets import verify_entries

    def run() -> dict[str, Any]:
        check_verify_lines(request.content)
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            entries = parse_snippets(check_text(request.content))
            return verify_entries(entries, repo, settings=settings, config=config,
                                  branch=request.branch, worktree=request.worktree).to_dict()

    return answer(run)


@router.post("/context", response_model=ContextResponseModel, responses=ERRORS,
             summary="A verified context slice with the reference contract")
def context_endpoint(request: ContextRequest, settings: SettingsDep,
                     config: ConfigDep) -> dict[str, Any]:
    from freshmark.services.context.build import build_context

    def run() -> dict[str, Any]:
        check_budget(request.budget)
        context_request = request.to_request()
        repo = _served(request.repo, settings, config, request.worktree)
        with no_host_paths(repo):
            return build_context(context_request, repo, settings=settings,
                                 config=config).to_dict()

    return answer(run)


@router.post("/check-answer", response_model=CheckAnswerResponseModel, responses=ERRORS,
             summary="An agent's answer checked against its slice and the code today")
def check_answer_endpoint(request: CheckAnswerRequest, settings: SettingsDep,
                          config: ConfigDep) -> dict[str, Any]:
    from freshmark.services.answer_check import AnswerCheckRequest, check_answer

    def run() -> dict[str, Any]:
        gold = [g.model_dump() for g in request.gold] if request.gold else None
        checked = AnswerCheckRequest.build(request.answer, request.context.model_dump(), gold)
        name = request.repo or checked.served.repo
        repo = _served(name, settings, config, checked.served.worktree)
        with no_host_paths(repo):
            return check_answer(checked, repo, settings=settings, config=config).to_dict()

    return answer(run)

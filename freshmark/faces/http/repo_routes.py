"""An index's state and its removal over HTTP (``router``): ``GET /v1/repos/{repo}/status``
(a read token is enough), ``DELETE /v1/repos/{repo}`` and
``DELETE /v1/repos/{repo}/branches/{branch}`` (full API token only, ``auth``).

The repository is named as for search (its id, name or key: ``faces.api.served``), never as a
host path; its copy need not exist any more. Answers: 200 ``{"repo", "dropped": [branch...]}``;
404 nothing indexed under that name or branch; 409 a base that branch overlays use (named in
the message); 503 the store is down, or an index run holds the branch for longer than the
drop waits (``BranchBusy``: retry). Errors have the API's ``{"detail": {"error", "message"}}``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from freshmark.faces.api.models import StatusResponseModel
from freshmark.faces.api.schema import BranchName, RepoName
from freshmark.faces.api.served import served_repo
from freshmark.faces.http.search_routes import ERRORS, ConfigDep, SettingsDep, answer

router = APIRouter(prefix="/v1/repos", tags=["index upkeep"])
OneBranch = Annotated[BranchName | None, Query(description="Only this branch.")]


def _drop(repo: str, branch: str | None, settings: Any, config: Any) -> dict[str, Any]:
    from freshmark.services.open_branch import store_for
    from freshmark.services.upkeep.drop import BranchState, drop_index

    def call() -> dict[str, Any]:
        store = store_for(settings)
        handle = served_repo(repo, settings=settings, config=config, store=store,
                             copy_needed=False)
        state = BranchState.open(settings, store, config=config)
        return drop_index(handle, branch, settings=settings, config=config,
                          state=state).to_dict()

    return answer(call)


@router.delete("/{repo}", responses=ERRORS,
               summary="Drop every branch index of a repository (needs the full API token)")
def drop_repo(repo: RepoName, settings: SettingsDep, config: ConfigDep) -> dict[str, Any]:
    return _drop(repo, None, settings, config)


@router.delete("/{repo}/branches/{branch:path}", responses=ERRORS,
               summary="Drop one branch index (needs the full API token)")
def drop_branch(repo: RepoName, branch: BranchName, settings: SettingsDep,
                config: ConfigDep) -> dict[str, Any]:
    return _drop(repo, branch, settings, config)


@router.get("/{repo}/status", response_model=StatusResponseModel, responses=ERRORS,
            response_model_exclude_unset=True,
            summary="Per branch: indexed commit, layer stamps, chunk counts, how far behind")
def repo_status(repo: RepoName, settings: SettingsDep, config: ConfigDep,
                branch: OneBranch = None) -> dict[str, Any]:
    """``freshmark status`` from the server's warm process: the CLI asks here when
    ``FRESHMARK_SERVER_URL`` is set. A gone branch is reported, not dropped (that is a write;
    the scheduler's upkeep retires it)."""
    from freshmark.core.redact import public_message
    from freshmark.faces.api.served import no_host_paths, without_host_path
    from freshmark.services.open_branch import store_for
    from freshmark.services.upkeep.status import handle_status

    def call() -> dict[str, Any]:
        store = store_for(settings)
        handle = served_repo(repo, settings=settings, config=config, store=store,
                             copy_needed=False)
        with no_host_paths(handle):
            rows = handle_status(handle, branch, settings=settings, config=config, store=store)
        for row in rows:  # why a head could not be read may name where the copy lives
            behind = row.get("behind") or {}
            for field in ("error", "head_fetch_error"):
                if behind.get(field):
                    behind[field] = public_message(without_host_path(behind[field], handle))
        return {"repo": handle.name, "branches": rows}

    return answer(call)

"""What ``/openapi.json`` says about the service routes of ``faces.http.app``: every status a
route really answers with, and the body it really has.

Those routes build their answers by hand (``JSONResponse``), so the models here describe the
shapes the handlers write: the webhook receiver's ``{"result": ...}`` and freshmark's one error
shape, ``{"detail": {"error", "message"}}``, which the on-demand branch route, ``/debug/queue``
and the Host, auth and body-limit middleware all answer with. ``/metrics`` is Prometheus text.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from freshmark.faces.api.models import ErrorBody
from freshmark.faces.api.schema import BranchName


class HealthOk(BaseModel):
    status: str = Field(description="'ok'.", examples=["ok"])
    version: str = Field(description="The freshmark package version.")


class HealthDown(BaseModel):
    status: str = Field(description="'unavailable'.", examples=["unavailable"])
    redis: str = Field(description="Why Redis did not answer (one line, at most 200 chars).")


class BranchQueued(BaseModel):
    job: str = Field(description="The job key the branch index runs under.")
    outcome: str = Field(description="What the request did: queued, coalesced, already "
                                     "indexed...")
    queue: str


class BranchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt 'base' is refused (400), not dropped

    branch: BranchName = Field(description="The branch to index on demand; a git branch name.")
    base: BranchName | None = Field(None, description="The branch it was cut from (default: "
                                                      "the repository's main branch); named, "
                                                      "it must be indexed.")


class WebhookAnswer(BaseModel):
    """``result`` is one of queued, ignored, duplicate, unknown_repo, unauthorized, too_large,
    timeout, malformed, unavailable, busy; other keys (event, why, error, delivery...) explain
    it."""

    model_config = ConfigDict(extra="allow")
    result: str


class QueueView(BaseModel):
    model_config = ConfigDict(extra="allow")
    queues: dict[str, int]
    due: int
    pending: list[dict[str, str]] = Field(description="Waiting, queued and running jobs.")
    parked: dict[str, dict[str, str]] = Field(description="Parked job key -> its last state.")
    failed: list[dict[str, Any]] = Field(description="The last 50 failures.")


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    texts = {
        400: "Malformed Content-Length",
        401: "Missing or wrong bearer token",
        403: "No API token configured (reachable server), or the read-only token asked "
             "for work",
        408: "The request body did not arrive in time",
        413: "The request body is larger than the API body cap",
        415: "The body is not declared as JSON (Content-Type: application/json)",
        421: "No token is required (loopback only) and the Host header is not a loopback "
             "name or one of $FRESHMARK_ALLOWED_HOSTS",
    }
    return {code: {"model": ErrorBody, "description": texts[code]} for code in codes}


def _json_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """As ``_errors``, spelled out as JSON: on a text route (``/metrics``) a ``model`` would
    be listed under the route's own media type, while the middleware answers in JSON."""
    ref = {"$ref": "#/components/schemas/ErrorBody"}  # listed by the search API's routes
    return {code: {"description": answer["description"],
                   "content": {"application/json": {"schema": ref}}}
            for code, answer in _errors(*codes).items()}


# Every route passes the Host check when no token is required (421, or 403 for a foreign
# Origin); every route but the webhooks the body limit (400/408/413); token-guarded ones the
# auth check (401/403); routes that take a body the JSON check (415).
_LIMITS = (400, 408, 413, 421)
_GUARDED = _errors(401, 403, *_LIMITS)

HEALTHZ: dict[int | str, dict[str, Any]] = {
    200: {"model": HealthOk, "description": "Redis answers"},
    503: {"model": HealthDown, "description": "Redis does not answer"},
    **_errors(*_LIMITS),
}
METRICS: dict[int | str, dict[str, Any]] = {
    200: {"description": "Prometheus text exposition format",
          "content": {"text/plain": {"schema": {"type": "string"}}}},
    **_json_errors(401, 403, *_LIMITS),  # 401/403 only with metrics_require_token
}
DEBUG_QUEUE: dict[int | str, dict[str, Any]] = {
    200: {"model": QueueView, "description": "Queue lengths, due, pending, parked, failed"},
    503: {"model": ErrorBody, "description": "Redis does not answer"},
    **_GUARDED,
}
BRANCHES: dict[int | str, dict[str, Any]] = {
    202: {"model": BranchQueued, "description": "The branch index was asked for"},
    **_GUARDED,
    **_errors(415),
    400: {"model": ErrorBody, "description": "Body not a JSON object with a string 'branch' "
          "(or a bad branch name, a malformed Content-Length, a lone surrogate escape)"},
    404: {"model": ErrorBody, "description": "Unknown repository (not in the config's "
          "[[repos]]), or no such branch on the remote"},
    503: {"model": ErrorBody, "description": "The queue is unavailable; retry"},
}
WEBHOOK: dict[int | str, dict[str, Any]] = {
    code: {"model": WebhookAnswer, "description": text} for code, text in (
        (200, "A ping, or a delivery already seen"),
        (202, "Queued, or ignored (with why)"),
        (400, "Malformed payload"),
        (401, "Missing, malformed or wrong signature or token (or no secret configured)"),
        (404, "Unknown repository"),
        (408, "The body did not arrive in time"),
        (413, "The body is larger than the webhook cap"),
        (503, "The queue is unavailable, or too many unverified bodies are streaming "
              "(with Retry-After); retry"),
    )
}
WEBHOOK[421] = {"model": ErrorBody, "description": "No token is required (loopback only) and "
                "the Host header is not a loopback name or one of $FRESHMARK_ALLOWED_HOSTS"}
# FastAPI lists a 422 for every route with path parameters; these take a plain string and
# read their bodies themselves, so they never answer 422.
NO_422 = ("/webhooks/{repo_id}", "/branches/{repo_id}")
BRANCH_BODY: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": BranchRequest.model_json_schema()}}}}
WEBHOOK_BODY: dict[str, Any] = {"requestBody": {"required": True, "description": "The "
                                "provider's push event, signed (X-Hub-Signature-256, "
                                "X-Gitlab-Token or X-Gitea-Signature)", "content": {
                                    "application/json": {"schema": {"type": "object"}}}}}


def without_phantom_422(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with the 422 answers of the ``NO_422`` routes taken out."""
    for path in NO_422:
        for operation in spec.get("paths", {}).get(path, {}).values():
            operation.get("responses", {}).pop("422", None)
    schemas = spec.get("components", {}).get("schemas", {})
    if "#/components/schemas/HTTPValidationError" not in json.dumps(spec.get("paths", {})):
        schemas.pop("HTTPValidationError", None)  # FastAPI's 422 body: no route sends it
        schemas.pop("ValidationError", None)
    return spec

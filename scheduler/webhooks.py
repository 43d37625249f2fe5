"""Push webhooks from GitHub, GitLab and Gitea/Forgejo: verify, parse, plan (no I/O here).

Verification runs on the raw body while it streams (``BodySignature``: the HMAC is updated
chunk by chunk) before anything parses it, and compares in constant time: GitHub sends
``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>``, Gitea and Forgejo the bare hex
HMAC in ``X-Gitea-Signature`` (``X-Forgejo-Signature``), GitLab the shared secret itself in
``X-Gitlab-Token``, which is compared before the body is read. A signature header that is not
of its provider's form (``signature_of``) is refused before a byte of the body is read. A
payload is only a hint of *which* branch moved: the job fetches the mirror and diffs from the
indexed commit, so ``commits[]`` and even ``after`` are never trusted for content.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from freshmark.adapters.git.names import is_valid_branch_name
from freshmark.core import jobspec
from freshmark.core.config import Layer, RepoConfig
from freshmark.core.errors import BadInput

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
_SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_DELIVERY_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")

_SIGNATURE_HEADERS = {
    "github": ("x-hub-signature-256",),
    "gitea": ("x-gitea-signature", "x-forgejo-signature"),
    "gitlab": ("x-gitlab-token",),
}
_EVENT_HEADERS = {
    "github": ("x-github-event",),
    "gitea": ("x-gitea-event", "x-forgejo-event"),
    "gitlab": ("x-gitlab-event",),
}
_DELIVERY_HEADERS = {
    "github": ("x-github-delivery",),
    "gitea": ("x-gitea-delivery", "x-forgejo-delivery"),
    "gitlab": ("x-gitlab-event-uuid", "idempotency-key"),
}


def _first(headers: Mapping[str, str], names: Sequence[str]) -> str | None:
    for name in names:
        value = headers.get(name)
        if value is not None:
            return value
    return None


# What each provider's signature header looks like; anything else is forged or broken.
_SIGNATURE_FORMS = {
    "github": re.compile(r"sha256=[0-9a-f]{64}"),
    "gitea": re.compile(r"[0-9a-f]{64}"),
    "gitlab": re.compile(r"[\x21-\x7e]{1,512}"),  # a token of printable ASCII
}


def signature_of(provider: str, headers: Mapping[str, str]) -> str | None:
    """The provider's signature header when it has the provider's form, else None (absent or
    malformed: checked before the body is read, so a forged request costs nothing).

    ``headers`` must be case-insensitive or lower-cased (Starlette's are)."""
    given = _first(headers, _SIGNATURE_HEADERS.get(provider, ()))
    form = _SIGNATURE_FORMS.get(provider)
    if given is None or form is None or not form.fullmatch(given.strip()):
        return None
    return given.strip()


class BodySignature:
    """A delivery's signature, checked while its body streams: ``update`` with each chunk,
    then ``matches``. GitLab's token signs no body, so ``refused_before_body`` already knows;
    an empty secret verifies nothing."""

    def __init__(self, provider: str, secret: str, given: str):
        self.provider, self._secret, self._given = provider, secret, given
        self._mac = hmac.new(secret.encode("utf-8"), digestmod=hashlib.sha256) \
            if provider in ("github", "gitea") else None

    @property
    def authenticated_before_body(self) -> bool:
        """True when the header alone proves the sender (GitLab's token matches)."""
        return self._mac is None and self.matches()

    def refused_before_body(self) -> bool:
        """True when no body could make the request genuine (no secret, a wrong token)."""
        return not self._secret or (self._mac is None and not self.matches())

    def update(self, chunk: bytes) -> None:
        if self._mac is not None:
            self._mac.update(chunk)

    def matches(self) -> bool:
        if not self._secret:
            return False
        if self._mac is None:
            expected = self._secret
        else:
            prefix = "sha256=" if self.provider == "github" else ""
            expected = prefix + self._mac.copy().hexdigest()
        return hmac.compare_digest(expected.encode("utf-8"), self._given.encode("utf-8"))


def signature_ok(provider: str, secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
    """True only for a request signed with ``secret`` (the whole body at once)."""
    given = signature_of(provider, headers)
    if given is None:
        return False
    check = BodySignature(provider, secret, given)
    check.update(body)
    return check.matches()


def event_of(provider: str, headers: Mapping[str, str]) -> str:
    """``push``, ``ping`` or the provider's own event name (anything else is ignored)."""
    raw = (_first(headers, _EVENT_HEADERS.get(provider, ())) or "").strip().lower()
    if raw in ("push", "push hook"):
        return "push"
    return raw[:40] or "unknown"


def delivery_id_of(provider: str, headers: Mapping[str, str], body: bytes) -> str:
    """The provider's delivery id, or a digest of the body when there is none (or it is odd):
    the same payload delivered twice is then still one job."""
    given = _first(headers, _DELIVERY_HEADERS.get(provider, ()))
    if given and _DELIVERY_RE.match(given):
        return given
    return "body-" + hashlib.sha256(body).hexdigest()[:40]


@dataclass(frozen=True)
class PushEvent:
    ref: str
    branch: str | None  # None for tags and other refs
    before: str
    after: str
    created: bool
    deleted: bool
    forced: bool


def _is_zero(sha: str) -> bool:
    return set(sha) == {"0"}


def _sha(payload: Mapping[str, object], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not _SHA_RE.match(value):
        raise BadInput(f"push payload field {name!r} is not a commit sha")
    return value


def parse_push(body: bytes) -> PushEvent:
    """The fields of a push payload that matter here; ``BadInput`` for anything malformed."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BadInput("body is not JSON (or nested too deeply)") from exc
    if not isinstance(payload, dict):
        raise BadInput("push payload is not a JSON object")
    ref = payload.get("ref")
    if not isinstance(ref, str) or not ref.startswith("refs/") or len(ref) > 300:
        raise BadInput("push payload has no valid 'ref'")
    before, after = _sha(payload, "before"), _sha(payload, "after")
    branch = None
    if ref.startswith("refs/heads/"):
        branch = ref.removeprefix("refs/heads/")
        if not is_valid_branch_name(branch):
            raise BadInput("push payload names an invalid branch")
    return PushEvent(
        ref=ref,
        branch=branch,
        before=before,
        after=after,
        created=bool(payload.get("created")) or _is_zero(before),
        deleted=bool(payload.get("deleted")) or _is_zero(after),
        forced=bool(payload.get("forced")),
    )


@dataclass(frozen=True)
class PushPlan:
    result: str  # accepted | ignored
    specs: tuple[jobspec.JobSpec, ...] = ()
    why: str = ""


def plan_push(
    event: PushEvent, repo: RepoConfig, layers: Sequence[Layer], branch_active: bool
) -> PushPlan:
    """Jobs for one push (pure). Tracked branches, and untracked ones someone asked to keep
    indexed (on demand), are indexed layer by layer on each layer's queue; a deleted branch is
    retired; everything else is acknowledged and ignored."""
    if event.branch is None:
        return PushPlan("ignored", why="not a branch")
    if event.branch not in repo.branches and not branch_active:
        return PushPlan("ignored", why="branch not tracked")
    if event.deleted:
        spec = jobspec.JobSpec(
            kind=jobspec.KIND_RETIRE, repo=repo.id, branch=event.branch,
            queue=jobspec.QUEUE_MAINTENANCE, reason="push: branch deleted",
        )
        return PushPlan("accepted", (spec,))
    reason = "push: new branch" if event.created else "push: forced" if event.forced else "push"
    specs = tuple(
        jobspec.JobSpec(
            kind=jobspec.KIND_INDEX, repo=repo.id, branch=event.branch, layer=layer.name,
            queue=layer.queue, target=event.after, reason=reason,
        )
        for layer in layers
    )
    return PushPlan("accepted", specs)

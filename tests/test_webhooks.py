"""Webhook verification, parsing and planning, and the endpoint through the ASGI client."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
import redis
from cluster_support import Recorder
from fastapi.testclient import TestClient

from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.config import Config, Layer, RepoConfig
from freshmark.core.errors import BadInput
from freshmark.faces.http.app import create_app
from scheduler import webhooks

SECRET = "s3cret-for-tests"
BEFORE, AFTER, ZERO = "1" * 40, "2" * 40, "0" * 40
LAYERS = (Layer("hot", ("src/**",), 60, "hot"), Layer("infra", ("**",), 3600, "infra"))
REPOS = (
    RepoConfig("shop", "file:///nowhere/shop.git", ("main",), "github", "SHOP_SECRET"),
    RepoConfig("lab", "file:///nowhere/lab.git", ("main",), "gitlab", "LAB_SECRET"),
    RepoConfig("tea", "file:///nowhere/tea.git", ("main",), "gitea", "TEA_SECRET"),
)
CONFIG = Config(layers=LAYERS, repos=REPOS)
ENV = {"SHOP_SECRET": SECRET, "LAB_SECRET": SECRET, "TEA_SECRET": SECRET}


def push_body(ref: str = "refs/heads/main", before: str = BEFORE, after: str = AFTER,
              **extra: object) -> bytes:
    return json.dumps({"ref": ref, "before": before, "after": after, **extra}).encode()


def github_headers(body: bytes, delivery: str = "d-1", secret: str = SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": f"sha256={digest}", "Content-Type": "application/json"}


@pytest.fixture
def send() -> Recorder:
    return Recorder()


@pytest.fixture
def http(redis_client: redis.Redis, send: Recorder) -> TestClient:
    return TestClient(create_app(config=CONFIG, client=redis_client, send=send, env=ENV))


# --- verification (pure) ---------------------------------------------------------------------


def test_github_signature_over_the_raw_body_verifies() -> None:
    body = push_body()
    assert webhooks.signature_ok("github", SECRET, body, _lower(github_headers(body)))


def test_github_signature_of_another_body_is_refused() -> None:
    headers = _lower(github_headers(push_body()))
    assert not webhooks.signature_ok("github", SECRET, push_body(after="3" * 40), headers)


def test_gitea_signature_is_the_bare_hex_hmac() -> None:
    body = push_body()
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert webhooks.signature_ok("gitea", SECRET, body, {"x-gitea-signature": digest})
    prefixed = {"x-gitea-signature": "sha256=" + digest}
    assert not webhooks.signature_ok("gitea", SECRET, body, prefixed)


def test_gitlab_token_must_equal_the_secret() -> None:
    assert webhooks.signature_ok("gitlab", SECRET, b"{}", {"x-gitlab-token": SECRET})
    assert not webhooks.signature_ok("gitlab", SECRET, b"{}", {"x-gitlab-token": SECRET + "x"})


def test_an_empty_secret_verifies_nothing() -> None:
    assert not webhooks.signature_ok("gitlab", "", b"{}", {"x-gitlab-token": ""})


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


# --- parsing and planning (pure) -------------------------------------------------------------


def test_all_zero_before_is_a_new_branch() -> None:
    assert webhooks.parse_push(push_body(before=ZERO)).created


def test_all_zero_after_is_a_deleted_branch() -> None:
    assert webhooks.parse_push(push_body(after=ZERO)).deleted


def test_forced_flag_is_read() -> None:
    assert webhooks.parse_push(push_body(forced=True)).forced


def test_tag_push_names_no_branch() -> None:
    assert webhooks.parse_push(push_body(ref="refs/tags/v1.0")).branch is None


@pytest.mark.parametrize("name", ["../etc/passwd", "a..b", "-rf", "x.lock", "a b", "a:b",
                                  "bad\x07bell", "trailing/", "x" * 300, "@{-1}", "a~1"])
def test_invalid_branch_names_are_refused(name: str) -> None:
    with pytest.raises(BadInput):
        webhooks.parse_push(push_body(ref=f"refs/heads/{name}"))


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"\xff\xfe", b'{"ref": 5}',
                                  push_body(after="xyz"), b'{"ref": "refs/heads/main"}'])
def test_malformed_payloads_are_refused(body: bytes) -> None:
    with pytest.raises(BadInput):
        webhooks.parse_push(body)


def test_push_to_a_tracked_branch_plans_one_job_per_layer_on_its_queue() -> None:
    plan = webhooks.plan_push(webhooks.parse_push(push_body()), REPOS[0], LAYERS, False)
    assert [(s.layer, s.queue, s.target) for s in plan.specs] == [
        ("hot", "hot", AFTER), ("infra", "infra", AFTER)]


def test_push_to_an_untracked_branch_is_ignored() -> None:
    event = webhooks.parse_push(push_body(ref="refs/heads/feature"))
    assert webhooks.plan_push(event, REPOS[0], LAYERS, False).result == "ignored"


def test_push_to_an_on_demand_branch_is_indexed() -> None:
    event = webhooks.parse_push(push_body(ref="refs/heads/feature"))
    assert webhooks.plan_push(event, REPOS[0], LAYERS, True).result == "accepted"


def test_deleted_branch_plans_a_retirement() -> None:
    plan = webhooks.plan_push(webhooks.parse_push(push_body(after=ZERO)), REPOS[0], LAYERS, False)
    assert [(s.kind, s.queue) for s in plan.specs] == \
        [(jobspec.KIND_RETIRE, jobspec.QUEUE_MAINTENANCE)]


# --- the endpoint ------------------------------------------------------------------------------


def test_signed_push_is_accepted_and_queued(http: TestClient, send: Recorder) -> None:
    body = push_body()
    answer = http.post("/webhooks/shop", content=body, headers=github_headers(body))
    assert answer.status_code == 202 and answer.json()["result"] == "accepted"
    assert send.keys() == ["index:shop:main:hot", "index:shop:main:infra"]


def test_unsigned_push_is_401_and_queues_nothing(http: TestClient, send: Recorder,
                                                 redis_client: redis.Redis) -> None:
    answer = http.post("/webhooks/shop", content=push_body(), headers={"X-GitHub-Event": "push"})
    assert answer.status_code == 401
    assert send.sent == [] and jobs.pending_jobs(redis_client) == []


def test_wrongly_signed_push_is_401(http: TestClient, send: Recorder) -> None:
    body = push_body()
    answer = http.post("/webhooks/shop", content=body, headers=github_headers(body, secret="no"))
    assert answer.status_code == 401 and send.sent == []


def test_same_delivery_twice_is_one_job(http: TestClient, send: Recorder) -> None:
    body = push_body()
    first = http.post("/webhooks/shop", content=body, headers=github_headers(body, "same"))
    second = http.post("/webhooks/shop", content=body, headers=github_headers(body, "same"))
    assert (first.status_code, second.json()["result"]) == (202, "duplicate")
    assert len(send.sent) == 2  # one job per layer, from the first delivery only


def test_same_delivery_id_for_two_repos_queues_both(redis_client: redis.Redis,
                                                    send: Recorder) -> None:
    twin = RepoConfig("twin", "file:///nowhere/twin.git", ("main",), "github", "SHOP_SECRET")
    config = Config(layers=LAYERS, repos=(*REPOS, twin))
    http = TestClient(create_app(config=config, client=redis_client, send=send, env=ENV))
    body = push_body()
    answers = [http.post(f"/webhooks/{repo}", content=body, headers=github_headers(body, "same"))
               for repo in ("shop", "twin")]
    assert [a.json()["result"] for a in answers] == ["accepted", "accepted"]
    assert {key.split(":")[1] for key in send.keys()} == {"shop", "twin"}


def test_same_payload_without_delivery_id_is_one_job(http: TestClient, send: Recorder) -> None:
    body = push_body()
    headers = github_headers(body)
    del headers["X-GitHub-Delivery"]
    http.post("/webhooks/shop", content=body, headers=headers)
    again = http.post("/webhooks/shop", content=body, headers=headers)
    assert again.json()["result"] == "duplicate"


def test_second_push_before_the_first_ran_is_coalesced(http: TestClient, send: Recorder,
                                                       redis_client: redis.Redis) -> None:
    for delivery, after in (("d-1", "3" * 40), ("d-2", "4" * 40)):
        body = push_body(after=after)
        http.post("/webhooks/shop", content=body, headers=github_headers(body, delivery))
    assert len(send.sent) == 2
    assert jobs.job_state(redis_client, "index:shop:main:hot")["target"] == "4" * 40


def test_body_over_25_mb_is_413_even_when_signed(http: TestClient, send: Recorder) -> None:
    body = push_body(padding="x" * (webhooks.MAX_BODY_BYTES + 1))
    answer = http.post("/webhooks/shop", content=body, headers=github_headers(body))
    assert answer.status_code == 413 and send.sent == []


def test_non_json_body_with_a_valid_signature_is_400(http: TestClient, send: Recorder) -> None:
    body = b"payload=%7B%7D"
    answer = http.post("/webhooks/shop", content=body, headers=github_headers(body))
    assert answer.status_code == 400 and send.sent == []


def test_unknown_repo_is_404(http: TestClient) -> None:
    body = push_body()
    answer = http.post("/webhooks/nope", content=body, headers=github_headers(body))
    assert answer.status_code == 404


def test_ping_is_acknowledged_and_ignored(http: TestClient, send: Recorder) -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    headers = {**github_headers(body), "X-GitHub-Event": "ping"}
    answer = http.post("/webhooks/shop", content=body, headers=headers)
    assert answer.status_code == 200 and answer.json()["result"] == "ignored" and send.sent == []


def test_gitlab_push_with_the_token_is_queued(http: TestClient, send: Recorder) -> None:
    headers = {"X-Gitlab-Token": SECRET, "X-Gitlab-Event": "Push Hook",
               "X-Gitlab-Event-UUID": "u-1"}
    assert http.post("/webhooks/lab", content=push_body(), headers=headers).status_code == 202
    assert send.keys() == ["index:lab:main:hot", "index:lab:main:infra"]


def test_gitea_push_with_the_signature_is_queued(http: TestClient, send: Recorder) -> None:
    body = push_body()
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Gitea-Signature": digest, "X-Gitea-Event": "push", "X-Gitea-Delivery": "g-1"}
    assert http.post("/webhooks/tea", content=body, headers=headers).status_code == 202


def test_deleted_branch_push_queues_a_retirement(http: TestClient, send: Recorder) -> None:
    body = push_body(after=ZERO, deleted=True)
    http.post("/webhooks/shop", content=body, headers=github_headers(body))
    assert send.sent[0][0] == jobspec.KIND_RETIRE and send.sent[0][3] == jobspec.QUEUE_MAINTENANCE


def test_queue_outage_is_503_and_queues_nothing(send: Recorder) -> None:
    dead = jobs.connect("redis://127.0.0.1:1/0")  # nothing listens on port 1
    client = TestClient(create_app(config=CONFIG, client=dead, send=send, env=ENV))
    body = push_body()
    answer = client.post("/webhooks/shop", content=body, headers=github_headers(body))
    assert answer.status_code == 503 and send.sent == []


def test_a_repository_whose_secret_is_unset_is_named_at_start_and_on_each_refusal(
        redis_client, send, caplog):
    env = {"LAB_SECRET": SECRET, "TEA_SECRET": SECRET}  # SHOP_SECRET unset
    with caplog.at_level("WARNING", logger="freshmark.webhooks"):
        http = TestClient(create_app(config=CONFIG, client=redis_client, send=send, env=env))
        assert "webhooks for shop will be refused (401): $SHOP_SECRET is not set" in caplog.text
        body = push_body()
        response = http.post("/webhooks/shop", content=body, headers=github_headers(body))
    assert response.status_code == 401 and not send.sent
    assert "webhook for shop refused: $SHOP_SECRET is not set" in caplog.text
    assert "lab" not in caplog.text and SECRET not in caplog.text

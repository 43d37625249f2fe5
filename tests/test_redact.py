"""Credentials in repository URLs never reach errors, stored job state, /debug/queue or logs."""

from __future__ import annotations

import io
import json
import logging

import pytest
import redis
from cluster_support import Recorder
from fastapi.testclient import TestClient

from freshmark.adapters import keys
from freshmark.adapters.git.mirrors import RemoteUnavailable, sync_mirror
from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig
from freshmark.core.redact import RedactingFilter, public_message, redact
from freshmark.core.settings import Settings
from freshmark.faces.http.app import create_app

SECRET = "ghp_s3cr3tT0ken"
URL = f"https://deploy:{SECRET}@127.0.0.1:1/shop.git"  # port 1: refused at once
SPEC = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main", layer="hot",
                       queue="hot")


@pytest.mark.parametrize(("text", "expected"), [
    (URL, "https://***@127.0.0.1:1/shop.git"),
    (f"http://{SECRET}@host/x", "http://***@host/x"),
    (f"fetch HTTPS://u:{SECRET}@h/x failed; retry https://u:p@g/y",
     "fetch HTTPS://***@h/x failed; retry https://***@g/y"),
    ("https://host/x.git", "https://host/x.git"),
    ("mail dev@example.com about git@host:x.git", "mail dev@example.com about git@host:x.git"),
])
def test_userinfo_of_every_url_is_redacted(text, expected):
    assert redact(text) == expected


def test_a_failing_remote_with_credentials_does_not_echo_them(fm_home):
    repo = RepoConfig("shop", URL, ("main",))
    with pytest.raises(RemoteUnavailable) as caught:
        sync_mirror(Settings.from_env(), repo)
    assert SECRET not in str(caught.value) and "***@127.0.0.1" in str(caught.value)


def test_a_job_error_is_stored_without_credentials(redis_client: redis.Redis):
    job_id = jobs.submit(redis_client, SPEC, Recorder()).job_id
    jobs.claim(redis_client, SPEC.key, job_id, max_attempts=5)
    jobs.finish(redis_client, SPEC.key, job_id, "failed", error=f"cannot clone {URL}")
    stored = [json.loads(x)["error"] for x in redis_client.lrange(keys.FAILED, 0, -1)]
    assert stored == ["cannot clone https://***@127.0.0.1:1/shop.git"]


def test_debug_queue_redacts_entries_stored_before_redaction(redis_client: redis.Redis):
    redis_client.lpush(keys.FAILED, json.dumps({"job": SPEC.key, "error": URL, "at": 1}))
    redis_client.hset(keys.PARKED, SPEC.key, json.dumps(["last_error", URL]))
    app = create_app(config=Config(repos=(RepoConfig("shop", URL),)), client=redis_client,
                     send=Recorder(), env={}, bind_host="127.0.0.1")
    shown = TestClient(app, base_url="http://127.0.0.1:8080").get("/debug/queue")
    assert shown.status_code == 200 and SECRET not in shown.text


def test_log_records_are_redacted_args_and_tracebacks_included():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("test.redact")
    logger.addHandler(handler)
    try:
        logger.warning("fetch %s failed", URL)
        try:
            raise RemoteUnavailable(f"raw {URL}")
        except RemoteUnavailable:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    assert SECRET not in stream.getvalue() and "https://***@127.0.0.1" in stream.getvalue()


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Bearer ghp_abc123def", "Authorization: Bearer ***"),
    ("authorization=Basic Zm06cGFzcw==", "authorization=Basic ***"),
    ("sent Bearer s3cr3tT0kenValue", "sent Bearer ***"),
    ("GET https://h/x?token=abc123&page=2", "GET https://h/x?token=***&page=2"),
    ("the read-only token cannot ask for work", "the read-only token cannot ask for work"),
    ("basic authentication failed", "basic authentication failed"),
])
def test_credentials_in_headers_and_query_strings_are_redacted(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("cannot fetch https://u:p@github.com/o/fan.git into /srv/fm/mirrors/fan.git: timeout",
     "cannot fetch https://***@github.com/o/fan.git into …/fan.git: timeout"),
    ("store directory /home/me/.freshmark/chroma is not writable",
     "store directory …/chroma is not writable"),
    ("clone file:///srv/git/shop.git failed", "clone file://…/shop.git failed"),
    ("run: freshmark index --branch feature/x", "run: freshmark index --branch feature/x"),
    ("http://127.0.0.1:8000/api/v2/heartbeat", "http://127.0.0.1:8000/api/v2/heartbeat"),
    ("two\nlines", "two lines"),
])
def test_a_public_message_has_no_secret_no_host_path_and_one_line(text, expected):
    assert public_message(text) == expected

"""Schemathesis against the real app (ASGI, in process): what ``/openapi.json`` promises holds.

A bounded run of positive data (what the schema accepts) on every documented operation, with
the full API token and an indexed fixture repository (``shop``, drawn half the time so answers
reach the search stack), checking: no 5xx, every status and body as documented, and no valid
request refused with a 4xx other than 404 (an unknown repository or branch). A second run
sends negative data (what the schema refuses: wrong types, missing fields, undecodable
bodies) and checks that every answer is documented, with its body, and none is a 5xx. Counts
by status are printed (``pytest -s``) so a run can be compared with the last.

The examples are the same in every run (Hypothesis ``derandomize``), so a test run is
reproducible; ``FRESHMARK_FUZZ_EXPLORE=1`` draws fresh ones, to look for new failures.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
import schemathesis
from cluster_support import Recorder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)
from search_fixtures import build_shop

from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app

TOKEN = "schema-fuzz-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = Config(repos=(RepoConfig("cfg", "file:///nowhere/cfg.git", ("main",), "github",
                                  "CFG_SECRET"),))
EXAMPLES_PER_OPERATION = 60
EXPLORE = bool(os.environ.get("FRESHMARK_FUZZ_EXPLORE"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, positive_data_acceptance]
# Valid data is accepted: 2xx, or 404 for a repository, branch or repo id nobody knows.
ACCEPTED = ["2xx", "404"]
# Webhooks need a provider's signature over the body: a fuzzer cannot make one, so their
# refusal (401) is the documented answer, not a rejected valid request.
SIGNED = {"/webhooks/{repo_id}"}


def _config() -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {"checks": {"positive_data_acceptance": {"expected-statuses": ACCEPTED}}})


@pytest.fixture
def schema(fm_home, make_repo, redis_client):
    build_shop(make_repo)  # indexed under the name "shop"
    app = create_app(config=CONFIG, client=redis_client, send=Recorder(),
                     env={"FRESHMARK_API_TOKEN": TOKEN, "CFG_SECRET": "s"},
                     bind_host="0.0.0.0")
    return schemathesis.openapi.from_asgi("/openapi.json", app, headers=AUTH, config=_config())


def _known_repo(case) -> None:
    """Name the indexed fixture (or the configured repo id), still valid for the schema."""
    if isinstance(case.body, dict) and "repo" in case.body:
        case.body["repo"] = "shop"
    if case.path_parameters and "repo_id" in case.path_parameters:
        case.path_parameters["repo_id"] = "cfg"


def _run(operation, statuses: Counter, mode: GenerationMode = GenerationMode.POSITIVE) -> None:
    checks = [c for c in CHECKS if not (c is positive_data_acceptance
                                        and operation.path in SIGNED)]

    @given(case=operation.as_strategy(generation_mode=mode), known=st.booleans())
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
              derandomize=not EXPLORE, suppress_health_check=list(HealthCheck))
    def fuzz(case, known: bool) -> None:
        if known:
            _known_repo(case)
        response = case.call(headers=AUTH)
        statuses[(operation.label, response.status_code)] += 1
        case.validate_response(response, checks=checks)

    fuzz()


def _report(statuses: Counter, title: str) -> None:
    print(f"\nschemathesis, {title}: {sum(statuses.values())} requests")
    for (label, status), count in sorted(statuses.items()):
        print(f"  {status}  {count:4d}  {label}")


def test_schemathesis_finds_no_response_off_the_schema(schema):
    statuses: Counter = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 13  # with the /v1/repos routes (status, two DELETEs)
    for operation in operations:
        _run(operation, statuses)
    _report(statuses, "positive data")
    assert not [key for key in statuses if key[1] >= 500]


def test_schemathesis_malformed_requests_never_get_a_5xx_or_an_undocumented_answer(schema):
    statuses: Counter = Counter()
    # The GET routes take no input, so there is nothing to get wrong.
    operations = [result.ok() for result in schema.get_all_operations()
                  if result.ok().method.upper() == "POST"]
    assert len(operations) == 7
    for operation in operations:
        _run(operation, statuses, GenerationMode.NEGATIVE)
    _report(statuses, "negative data")
    # Some are answered 2xx: where the schema is stricter than the server (a query between
    # 25,000 characters and 100,000 bytes, a kind in capitals), by design.
    assert statuses and not [key for key in statuses if key[1] >= 500]

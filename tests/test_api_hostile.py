"""1,200 hostile requests against a real server on loopback (uvicorn, real Redis, real store):
every answer is a 4xx with a one-line error (or a trailing-slash redirect), none is a 5xx or
a reset, nothing is queued, no answer holds a token, a secret or a host path. Then 400 more
against a server that asks for no token (loopback only), from a hostile page's point of view:
foreign ``Host`` (DNS rebinding) and ``Origin`` (cross-site) on every route, and bodies a page
can send without a CORS preflight; none is answered, nothing is queued.

Counts by status are printed (``pytest -s`` shows them) so a run can be compared with the last.
"""

from __future__ import annotations

import json
import random
import resource
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import redis
from cluster_support import Recorder
from live_server import live_server, raw_exchange
from search_fixtures import build_shop

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app
from freshmark.faces.http.limits import BodyLimits

REQUESTS = 1200
FULL, READ = "hostile-full-t0ken", "hostile-read-t0ken"
CONFIG = Config(repos=(RepoConfig("shop", "file:///nowhere/shop.git", ("main",), "github",
                                  "SHOP_SECRET"),))
ENV = {"FRESHMARK_API_TOKEN": FULL, "FRESHMARK_API_READ_TOKEN": READ, "SHOP_SECRET": "s3cret"}
PLANTED = (FULL, READ, "s3cret")
HOST_PATHS = ["/etc", "/etc/passwd", "/", "/proc/self", "/root/.ssh", "../../..", "~",
              "/no/such/dir", "C:\\Windows", "file:///etc", "shop/../..", "/tmp"]
ODD_REPOS = ["a" * 5000, "shop\x00", "\x00", "a\nb", "", " ", "é" * 300, "shop\r\nX: y",
             "%00", "$(id)", "`id`", "shop;rm -rf /"]
Case = tuple[str, str, dict[str, str], bytes]


def _auth(rng: random.Random) -> dict[str, str]:
    return rng.choice([{}, {"Authorization": f"Bearer {READ}"},
                       {"Authorization": f"Bearer {FULL}"}, {"Authorization": "Bearer nope"},
                       {"Authorization": FULL}, {"Authorization": "Basic " + "x" * 300}])


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _api_body(rng: random.Random) -> bytes:
    repo = rng.choice(HOST_PATHS + ODD_REPOS)
    return rng.choice([
        _json({"query": "cancel", "repo": repo, "worktree": rng.random() < 0.5}),
        _json({"content": "etc/passwd\tabcdef12", "repo": repo, "worktree": True}),
        _json({"content": "x\tabcdef12\n" * 3000, "repo": "shop"}),
        _json({"query": "q", "repo": "shop", "budget": 10**9, "level": "L3"}),
        _json({"query": "x" * 20_000, "repo": "shop"}), _json({"query": "q", "repo": "shop",
                                                                "k": 10**6}),
        b"\xff\xfe\x00\x80", b"{", b"[]", b"null", b"[" * 50_000 + b"]" * 50_000,
        _json({"query": {"$ne": 1}, "repo": ["shop"]}), b"",
        b'{"query": "\\ud800", "repo": "shop"}', b'{"query": "q", "repo": "\\udfff"}',
        b'{"content": "a.py\\t\\udc80", "repo": "shop", "level": "\\ud800"}',
    ])


def _api_case(rng: random.Random) -> Case:
    path = rng.choice(["/v1/search", "/v1/search/files", "/v1/verify", "/v1/context"])
    content_type = "application/json" if rng.random() < 0.7 else rng.choice([
        "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
    headers = {"Content-Type": content_type, "Authorization": f"Bearer {READ}"}
    if rng.random() < 0.3:
        headers = {**headers, **_auth(rng)} if rng.random() < 0.5 else {"Content-Type":
                                                                         content_type}
    return "POST", path, headers, _api_body(rng)


def _other_case(rng: random.Random) -> Case:
    kind = rng.randrange(8)
    if kind == 0:  # asking for work with the read token, with bad bodies, as a form or text
        body = rng.choice([_json({"branch": "x"}), b"{", _json({"branch": "../../x"}),
                           b'{"branch": "\\ud800"}'])
        token = READ if body == _json({"branch": "x"}) else FULL
        content_type = rng.choice(["application/json", "text/plain",
                                   "application/x-www-form-urlencoded"])
        return "POST", "/branches/shop", {"Authorization": f"Bearer {token}",
                                          "Content-Type": content_type}, body
    if kind == 1:  # unknown repo for on-demand work
        name = quote(rng.choice([*ODD_REPOS, "nope"]), safe="")
        return "POST", f"/branches/{name}", {"Authorization": f"Bearer {FULL}"}, \
            _json({"branch": "main"})
    if kind == 2:  # MCP from a foreign host or origin, or without a token
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json", **_auth(rng)}
        headers.update(rng.choice([{"Host": "evil.example"}, {"Origin": "http://evil.example"},
                                   {}]))
        return "POST", "/mcp/", headers, _json({"jsonrpc": "2.0", "id": 1, "method": "nope"})
    if kind == 3:  # lying or nonsense lengths
        length = rng.choice(["-1", "abc", str(10**15), "99999999999999999999999"])
        return "POST", "/v1/search", {"Content-Length": length, "Authorization":
                                      f"Bearer {READ}"}, b"{}"
    if kind == 4:  # debug and docs without a token, odd paths
        bad = rng.choice([{}, {"Authorization": "Bearer nope"}, {"Authorization": FULL}])
        return "GET", rng.choice(["/debug/queue", "/openapi.json", "/docs", "/v1", "/../etc",
                                  "/debug/%00", "/v1/search/../../x"]), bad, b""
    if kind == 5:  # wrong methods
        return rng.choice(["PUT", "DELETE", "PATCH"]), rng.choice(["/v1/search", "/healthz",
                                                                   "/webhooks/shop"]), \
            {"Authorization": f"Bearer {FULL}"}, b""
    if kind == 6:  # unsigned or badly signed webhooks
        return "POST", "/webhooks/shop", rng.choice([{}, {"X-Hub-Signature-256": "sha256=0"}]), \
            _json({"ref": "refs/heads/main"})
    return "POST", "/v1/search", {"Authorization": f"Bearer {READ}", "Content-Type":
                                  "application/json"}, b"x" * (2 * 1024 * 1024)  # over the cap


def hostile_case(rng: random.Random) -> Case:
    return _api_case(rng) if rng.random() < 0.6 else _other_case(rng)


def _send(http: httpx.Client, base_url: str, case: Case) -> tuple[int, str]:
    """(status, body text); a lying Content-Length goes over a raw socket (httpx refuses)."""
    method, path, headers, body = case
    if "Content-Length" not in headers:
        answer = http.request(method, path, headers=headers, content=body)
        return answer.status_code, answer.text
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items())
    status, _ = raw_exchange(base_url, head.encode(), body)
    return status, ""


def _surrogate_cases(indexed_path: str) -> list[Case]:
    """A lone surrogate escape reaching the search stack of an indexed repository (the
    issue's 3 of 3): the repository is named by the path it was indexed from."""
    repo = json.dumps(indexed_path)
    headers = {"Authorization": f"Bearer {READ}", "Content-Type": "application/json"}
    return [("POST", path, headers, (template % repo).encode()) for path, template in (
        ("/v1/search", '{"query": "cancel \\ud800", "repo": %s}'),
        ("/v1/context", '{"query": "\\ud800 order", "repo": %s}'),
        ("/v1/verify", '{"content": "orders/\\ud800.py\\tabcdef12", "repo": %s}'),
    )]


def test_twelve_hundred_hostile_requests_get_4xx_and_queue_nothing(
    fm_home: Path, redis_client: redis.Redis, capsys: Any,
) -> None:
    send = Recorder()
    app = create_app(config=CONFIG, client=redis_client, send=send, env=ENV,
                     bind_host="127.0.0.1", limits=BodyLimits(timeout_seconds=5.0))
    rng = random.Random(20261201)
    statuses: Counter[int] = Counter()
    multi_line: list[str] = []
    leaks: list[str] = []
    peak_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with live_server(app) as base_url, httpx.Client(base_url=base_url, timeout=30) as http:
        for _ in range(REQUESTS):
            case = hostile_case(rng)
            status, text = _send(http, base_url, case)
            statuses[status] += 1
            if "\n" in text.strip():
                multi_line.append(f"{case[0]} {case[1]}: {text[:200]}")
            leaks += [f"{case[1]}: {secret}" for secret in (*PLANTED, str(fm_home))
                      if secret in text]
    # The server runs in this process: its peak memory is this process's high-water mark.
    peak_after_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with capsys.disabled():
        print(f"\nhostile API requests by status: {dict(sorted(statuses.items()))}; "
              f"5xx: {sum(n for s, n in statuses.items() if s >= 500)}; "
              f"jobs queued: {len(send.sent)}; peak RSS {peak_after_kib // 1024} MiB "
              f"(+{(peak_after_kib - peak_before_kib) // 1024} MiB during the run)")
    assert sum(statuses.values()) == REQUESTS
    # 307: Starlette's trailing-slash redirect (a repo id ending in "/"), answered unread.
    assert all(400 <= status < 500 or status == 307 for status in statuses), statuses
    assert multi_line == [] and leaks == []
    assert send.sent == [] and jobs.pending_jobs(redis_client) == []
    assert redis_client.zcard(keys.DUE) == 0


OPEN_REQUESTS = 400
FOREIGN = ["attacker.example:7881", "attacker.example", "127.0.0.1.attacker.example",
           "localhost.attacker.example:80", "127.0.0.1:80.evil", "0.0.0.0", "[::ffff:7f00:1]",
           "", "LOCALHOST:8080@evil"]
OPEN_PATHS = ["/v1/search", "/v1/search/files", "/v1/verify", "/v1/context", "/branches/shop",
              "/debug/queue", "/openapi.json", "/docs", "/mcp/", "/metrics", "/healthz",
              "/webhooks/shop"]


def _page_case(rng: random.Random, base_url: str) -> tuple[Case, bool]:
    """A request a hostile page can make the browser send; (case, whether it is foreign)."""
    path = rng.choice(OPEN_PATHS)
    body = rng.choice([_json({"query": "cancel", "repo": "shop"}), _json({"branch": "main"}),
                       b'{"query": "\\ud800", "repo": "shop"}', b"branch=main"])
    content_type = rng.choice(["text/plain", "application/x-www-form-urlencoded",
                               "multipart/form-data; boundary=x", "application/json"])
    headers = {"Content-Type": content_type}
    foreign = rng.random() < 0.8
    if foreign:
        host = rng.choice(FOREIGN)
        if rng.random() < 0.5:
            headers["Host"] = host
        else:
            headers["Origin"] = rng.choice([f"http://{host}", "null", f"https://{host}"])
    method = "GET" if path in ("/debug/queue", "/openapi.json", "/docs", "/metrics",
                               "/healthz") else "POST"
    return (method, path, headers, body if method == "POST" else b""), foreign


def test_a_hostile_page_reaches_nothing_on_a_server_without_a_token(
    fm_home: Path, redis_client: redis.Redis, capsys: Any,
) -> None:
    send = Recorder()
    app = create_app(config=CONFIG, client=redis_client, send=send, env={},
                     bind_host="127.0.0.1", limits=BodyLimits(timeout_seconds=5.0))
    rng = random.Random(20261202)
    statuses: Counter[int] = Counter()
    answered_foreign: list[str] = []
    with live_server(app) as base_url, httpx.Client(base_url=base_url, timeout=30) as http:
        for _ in range(OPEN_REQUESTS):
            (method, path, headers, body), foreign = _page_case(rng, base_url)
            answer = http.request(method, path, headers=headers, content=body)
            statuses[answer.status_code] += 1
            if foreign and answer.status_code not in (403, 421):
                answered_foreign.append(f"{method} {path} {headers}: {answer.status_code}")
    with capsys.disabled():
        print(f"\nhostile page requests (no token) by status: {dict(sorted(statuses.items()))}; "
              f"jobs queued: {len(send.sent)}")
    assert answered_foreign == []
    assert all(status < 500 for status in statuses), statuses
    assert send.sent == [] and jobs.pending_jobs(redis_client) == []


def test_lone_surrogates_reaching_an_indexed_repository_are_400(
    fm_home: Path, redis_client: redis.Redis, make_repo: Any,
) -> None:
    indexed = build_shop(make_repo).repo.path
    app = create_app(config=CONFIG, client=redis_client, send=Recorder(), env=ENV,
                     bind_host="127.0.0.1")
    with live_server(app) as base_url, httpx.Client(base_url=base_url, timeout=30) as http:
        statuses = [_send(http, base_url, case)[0] for case in _surrogate_cases(str(indexed))]
    assert statuses == [400, 400, 400]

"""Memory of ``freshmark serve`` while forged webhook bodies stream in.

Starts ``freshmark serve`` as its own process (a GitHub repository with a secret in a temporary
config, Redis from ``--redis-url``), then sends ``--bodies`` concurrent deliveries of
``--megabytes`` MB each, signed with a well-formed but wrong ``X-Hub-Signature-256``, and
prints the server's resident memory before, its peak (``VmHWM``) and after, with the answers'
statuses. Nothing is asserted: the figures are for comparison between versions.

Usage::

    .venv/bin/python bench/bench_webhook_memory.py --redis-url redis://127.0.0.1:6397/13
        [--bodies 8] [--megabytes 25] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

CONFIG = '[[repos]]\nid = "shop"\nurl = "file:///nowhere/shop.git"\nprovider = "github"\n' \
         'webhook_secret_env = "SHOP_SECRET"\n'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of a process, in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def _start_serve(port: int, home: Path, redis_url: str) -> subprocess.Popen[bytes]:
    config = home / "freshmark.toml"
    config.write_text(CONFIG)
    env = {**os.environ, "FRESHMARK_HOME": str(home), "FRESHMARK_CONFIG": str(config),
           "FRESHMARK_REDIS_URL": redis_url, "SHOP_SECRET": "bench-s3cret",
           "FRESHMARK_API_TOKEN": "bench-t0ken"}
    serve = subprocess.Popen([sys.executable, "-m", "freshmark.faces.cli.main", "serve",
                              "--port", str(port), "--loglevel", "warning"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return serve
        except httpx.HTTPError:
            time.sleep(0.2)
    serve.kill()
    raise SystemExit("freshmark serve did not start")


def _forged(port: int, body: bytes) -> int:
    headers = {"X-GitHub-Event": "push", "Content-Type": "application/json",
               "X-Hub-Signature-256": "sha256=" + "0" * 64}
    try:
        return httpx.post(f"http://127.0.0.1:{port}/webhooks/shop", content=body,
                          headers=headers, timeout=120).status_code
    except httpx.HTTPError as exc:
        return -len(type(exc).__name__)  # a transport error, told apart from a status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--bodies", type=int, default=8)
    parser.add_argument("--megabytes", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    body = b'{"ref": "refs/heads/main", "padding": "' + b"x" * (args.megabytes * 10**6 - 40) \
        + b'"}'
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="bench-webhook-") as home:
        serve = _start_serve(port, Path(home), args.redis_url)
        try:
            before = _memory_kib(serve.pid)
            statuses: Counter[int] = Counter()
            started = time.monotonic()
            with ThreadPoolExecutor(args.bodies) as pool:
                for _ in range(args.rounds):
                    statuses.update(pool.map(lambda _: _forged(port, body), range(args.bodies)))
            seconds = time.monotonic() - started
            after = _memory_kib(serve.pid)
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    print(f"{args.rounds} rounds of {args.bodies} concurrent forged {args.megabytes} MB "
          f"webhook bodies in {seconds:.1f} s; answers {dict(sorted(statuses.items()))}")
    print(f"serve RSS before {before['VmRSS'] // 1024} MiB, peak {after['VmHWM'] // 1024} MiB "
          f"(+{(after['VmHWM'] - before['VmRSS']) // 1024} MiB), "
          f"after {after['VmRSS'] // 1024} MiB")


if __name__ == "__main__":
    main()

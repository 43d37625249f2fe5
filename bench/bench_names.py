"""What choosing a new repository's name costs as the repositories held grow (issue 20).

A store (embedded, under ``--work``) is filled with ``--repos`` branch collections, each with
a manifest and no chunks; then the name of a new repository is chosen ``--rounds`` times, in
a process that opened the store, two ways:

- listing: every manifest of the store read (``Store.list_manifests``) and the name chosen
  among them (``services.repos.unique_name``), as a first index did before the registry;
- registry: ``services.repos.registered_name`` over the store's name registry (two reads by
  id and a claim), as a first index does now.

Each round claims a new name in the registry (new keys), so no round reads a name cached by
an earlier one. Prints the wall time per choice (median and p95 over the rounds).

Usage::

    /work/main/.venv/bin/python bench/bench_names.py --repos 100,1000 --work /tmp/fm-names
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.store.chroma import Store
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.settings import Settings
from freshmark.services.repos import registered_name, unique_name


def fill(store: Store, repos: int) -> None:
    for number in range(repos):
        key = f"path:/src/group{number % 50}/repo{number}"
        store.create_branch(Manifest(repo=f"repo{number}", repo_key=key, branch="main",
                                     embedder="hashing", collection=collection_name(key, "main"),
                                     repo_path=key.removeprefix("path:")))


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def measure(store: Store, rounds: int) -> dict[str, tuple[float, float]]:
    listing, registry = [], []
    for number in range(rounds):
        path = Path(f"/src/new/repo{number % 7}")
        key = f"path:/src/new{number}/repo{number % 7}"
        started = time.perf_counter()
        taken = {m.repo: m.repo_key for m in store.list_manifests()}
        unique_name(key, path, path.name, taken)
        listing.append(time.perf_counter() - started)
        started = time.perf_counter()
        registered_name(store.names(), key, path, path.name)
        registry.append(time.perf_counter() - started)
    return {"listing": (statistics.median(listing), _p95(listing)),
            "registry": (statistics.median(registry), _p95(registry))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default="100,1000", help="Repositories held, comma-separated.")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--work", type=Path, default=Path("/tmp/fm-names"))
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}")
    print("| repositories held | listing p50 / p95 (ms) | registry p50 / p95 (ms) |")
    print("|---|---|---|")
    for repos in (int(n) for n in args.repos.split(",")):
        home = args.work / f"repos-{repos}"
        shutil.rmtree(home, ignore_errors=True)
        os.environ["FRESHMARK_HOME"] = str(home)
        store = Store.open(Settings.from_env())
        fill(store, repos)
        store.names()  # the registry seeded once from the manifests (a store from before it)
        got = measure(store, args.rounds)
        cells = " | ".join(f"{p50 * 1000:.1f} / {p95 * 1000:.1f}"
                           for p50, p95 in (got["listing"], got["registry"]))
        print(f"| {repos:,} | {cells} |", flush=True)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()

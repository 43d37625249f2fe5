"""Index throughput on real code nobody here wrote, with a real history.

Builds a git repository from successive released versions of one package (wheels from the
registry, unpacked and committed in order: real edits, renames and deletes), then measures:

- full index of the first version: files/s, chunks/s, share of time outside embedding, peak RSS;
- an incremental re-index after a commit touching ~1% of the files, as a ratio of the full index,
  and whether embeddings computed == chunks changed;
- the re-index after each real version upgrade.

Usage: python bench/bench_index.py [--package celery] [--versions 5.3.6,5.4.0,5.5.3]
       [--embedder minilm] [--work DIR]
Needs the package registry (pip download) the first time; wheels are kept in --work.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from repo_builder import RepoBuilder, git

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo


def fetch_wheels(package: str, versions: list[str], into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    wheels = []
    for version in versions:
        found = list(into.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
        if not found:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                 ":all:", "-d", str(into), f"{package}=={version}"],
                check=True,
            )
            found = list(into.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
        wheels.append(found[0])
    return wheels


def replace_tree(repo: RepoBuilder, wheel: Path) -> None:
    for child in repo.path.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if ".dist-info/" not in name and not name.endswith("/"):
                archive.extract(name, repo.path)


def touch_one_percent(repo: RepoBuilder) -> int:
    files = sorted(p for p in repo.path.rglob("*.py") if ".git" not in p.parts)
    step = max(1, len(files) // max(1, len(files) // 100))
    touched = files[::step][: max(1, len(files) // 100)]
    for path in touched:
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n\ndef _bench_added_helper(value):\n    return value\n")
    repo.commit("touch ~1% of files")
    return len(touched)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_index(repo: RepoBuilder, settings: Settings, embedder) -> dict:
    summary = index_repo(IndexRequest(repo.path), settings=settings, config=Config(),
                         embedder=embedder)
    return summary.to_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="celery")
    parser.add_argument("--versions", default="5.3.6,5.4.0,5.5.3")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "fm-bench-index")
    args = parser.parse_args()
    versions = args.versions.split(",")
    wheels = fetch_wheels(args.package, versions, args.work / "wheels")

    scratch = Path(tempfile.mkdtemp(prefix="fm-bench-"))
    os.environ["FRESHMARK_HOME"] = str(scratch / "home")
    settings = Settings.from_env()
    embedder = get_embedder(args.embedder, settings.cache_dir)
    embedder.embed(["warm up the model"])
    repo = RepoBuilder.init(scratch / args.package)
    replace_tree(repo, wheels[0])
    repo.commit(f"{args.package} {versions[0]}")
    files = int(git(repo.path, "ls-files").count("\n")) + 1

    full = timed_index(repo, settings, embedder)
    outside = 1 - full["embed_seconds"] / full["seconds"]
    print(f"repository: {args.package} {versions[0]}, {files} files; embedder {embedder.id}")
    print(f"full index: {full['seconds']:.1f} s, {files / full['seconds']:.1f} files/s, "
          f"{full['chunks_added'] / full['seconds']:.1f} chunks/s, {full['chunks_added']} chunks")
    print(f"  embedding {full['embed_seconds']:.1f} s; share of time outside embedding: "
          f"{outside:.1%} (goal <= 20%)")

    touched = touch_one_percent(repo)
    inc = timed_index(repo, settings, embedder)
    changed = inc["chunks_added"] + inc["chunks_updated"]
    print(f"incremental, {touched} files touched (~1%): {inc['seconds']:.2f} s = "
          f"{inc['seconds'] / full['seconds']:.2%} of the full index (goal <= 3%)")
    print(f"  embeddings computed {inc['embeddings_computed']} vs chunks changed {changed} "
          f"({'equal' if inc['embeddings_computed'] == changed else 'DIFFERENT'})")

    for wheel, version in zip(wheels[1:], versions[1:], strict=True):
        replace_tree(repo, wheel)
        repo.commit(f"{args.package} {version}")
        up = timed_index(repo, settings, embedder)
        print(f"upgrade to {version}: {up['files_changed']} files changed, "
              f"{up['chunks_added']} added, {up['chunks_updated']} updated, "
              f"{up['chunks_tombstoned']} tombstoned, {up['embeddings_computed']} embedded, "
              f"{up['embeddings_reused']} reused, {up['seconds']:.1f} s "
              f"({up['seconds'] / full['seconds']:.1%} of full)")
    store = Store.open(settings)
    (manifest,) = store.list_manifests()
    index = store.branch(manifest.repo_key, manifest.branch)
    print(f"final: {index.count({'status': 'live'})} live, "
          f"{index.count({'status': 'tombstoned'})} tombstoned chunks")
    print(f"peak memory (RSS): {peak_rss_mib():.0f} MiB")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

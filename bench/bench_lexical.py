"""The lexical engine (tantivy) on one corpus: build, catch-up, queries, memory, disk, quality.

Corpus: the Python standard library, then the virtualenv's site-packages (real code, distinct
files), chunked by freshmark's ``chunk_text`` up to ``--size`` chunks (cached as JSON lines
under ``--work``).
The engine is driven through its catch-up path (``TantivyCollection.refresh``) from a branch
view over those records held in memory, so no Chroma store is involved: what is measured is
the engine alone.

Each phase in a fresh process: full build (wall, CPU, peak RSS, its commit included), a
10-file incremental catch-up in a new process (open, apply, commit), the first query in a new
process (open + answer), short (CoSQA questions) and long (issue-sized, weighted by
``plan_query``) query CPU p50/p95, the query process's RSS after all queries (and its anonymous
part: the segments are file-backed maps), and the size on disk (chunk and file indexes).
Quality: lexical MRR@10 on CoSQA (552 snippets, 313 questions). ``--hits OUT`` writes each
query's top-10 ids and best-file chunks, and ``--against OLD`` prints their overlap with an
earlier run's (the same corpus and queries), to tell a ranking change from noise.

Usage::

    .venv/bin/python bench/bench_lexical.py [--size 100000] [--work DIR] [--json OUT]
        [--hits OUT] [--against OLD]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_search import chunk_rows

from freshmark.adapters.lexical.tantivy_engine import TantivyChannel
from freshmark.adapters.lexical.tantivy_store import TantivyCollection
from freshmark.core.manifest import Manifest
from freshmark.core.query import plan_query
from freshmark.core.stamp import ChunkRecord, chunk_id, sha256_hex

# The shared evaluation sets sit beside the checkout (or beside the worktrees' folder).
COSQA = next((base / "shared" / "eval" / "cosqa" / "cosqa_dev_retrieval.json"
              for base in (ROOT.parent, ROOT.parent.parent)
              if (base / "shared" / "eval" / "cosqa").is_dir()), ROOT.parent / "shared")
STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
NAME = "bench-lexical"
LONG_QUERIES = 60
INCREMENTAL_FILES = 10


# -- corpus and a branch view over it ---------------------------------------------------------
def corpus(work: Path, size: int) -> list[ChunkRecord]:
    cached = work / f"python-{size}.jsonl.gz"
    if not cached.exists():
        work.mkdir(parents=True, exist_ok=True)
        rows = _chunk({"stdlib": STDLIB, "site-packages": SITE_PACKAGES}, size)
        with gzip.open(cached, "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    with gzip.open(cached, "rt", encoding="utf-8") as handle:
        return [_record(json.loads(line)) for line in handle]


def _chunk(roots: dict[str, Path], size: int) -> Iterator[dict[str, Any]]:
    produced = 0
    files = [(name, root, file) for name, root in roots.items()
             for file in sorted(root.rglob("*.py"))
             if name == "site-packages" or "site-packages" not in file.parts]
    for name, root, file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for row in chunk_rows(f"{name}/{file.relative_to(root)}", text):
            yield row
            produced += 1
            if produced >= size:
                return


def _record(row: dict[str, Any], generation: int = 1) -> ChunkRecord:
    file_kind = "test" if "/test" in row["path"] or row["path"].startswith("test") else "source"
    return ChunkRecord(
        repo="stdlib", branch="bench", commit="0" * 40, path=row["path"], symbol=row["symbol"],
        start_line=row["start"], end_line=row["end"], indexed_at="2026-01-01T00:00:00Z",
        blob_sha="0" * 40, content_sha256="0" * 64, kind=row["kind"], language="python",
        signature=row["signature"], file_kind=file_kind,
        id=chunk_id(row["path"], row["symbol"], row["ordinal"]), text=row["text"],
        text_sha256=sha256_hex(row["text"]), updated_gen=generation,
    )


class MemoryBranch:
    """A branch view over records held in memory: the manifest and the generation filter the
    engines' catch-up reads (``BranchView.iter_records`` with ``updated_gen > G``)."""

    def __init__(self, records: Sequence[ChunkRecord], generation: int) -> None:
        self.records = list(records)
        self.manifest = Manifest(repo="stdlib", repo_key="stdlib", branch="bench",
                                 embedder="none", collection=NAME,
                                 created_at="2026-01-01T00:00:00Z", generation=generation)
        self.name = NAME
        self.collection_id = "memory"

    def reload_manifest(self) -> Manifest:
        return self.manifest

    def manifest_for_request(self) -> Manifest:
        return self.manifest

    def iter_records(self, where: dict[str, Any] | None = None,
                     include_text: bool = True) -> Iterator[ChunkRecord]:
        above = -1 if where is None else int(where["updated_gen"]["$gt"])
        return (r for r in self.records if r.updated_gen > above)

    def layers(self) -> list[tuple[MemoryBranch, frozenset[str]]]:
        return [(self, frozenset())]


def incremented(records: Sequence[ChunkRecord]) -> list[ChunkRecord]:
    """The records with those of ``INCREMENTAL_FILES`` files rewritten at generation 2."""
    paths = sorted({r.path for r in records})[:: max(1, len({r.path for r in records})
                                                     // INCREMENTAL_FILES)][:INCREMENTAL_FILES]
    changed = set(paths)
    out = []
    for record in records:
        if record.path in changed:
            row = {"path": record.path, "symbol": record.symbol, "kind": record.kind,
                   "signature": record.signature, "start": record.start_line,
                   "end": record.end_line, "text": record.text + "\n# edited\n",
                   "ordinal": 0}
            new = _record(row, generation=2)
            new.id = record.id
            out.append(new)
        else:
            out.append(record)
    return out


# -- queries ----------------------------------------------------------------------------------
def short_queries() -> list[str]:
    return list(json.loads(COSQA.read_text())["queries"].values())


def long_queries(records: Sequence[ChunkRecord]) -> list[str]:
    """Issue-sized texts: a sentence of prose around ~80 words of a chunk's code."""
    step = max(1, len(records) // LONG_QUERIES)
    picked = records[::step][:LONG_QUERIES]
    return [f"When I call {r.symbol} it fails with an error. Here is the code involved: "
            + " ".join(r.text.split()[:80]) for r in picked]


def _plans(texts: Sequence[str]) -> list[tuple[list[str], dict[str, float]]]:
    plans = [plan_query(t) for t in texts]
    return [(p.terms, p.weights) for p in plans if p.terms]


# -- the engine in this process ---------------------------------------------------------------
def _directory(work: Path) -> Path:
    return work / "tantivy" / NAME


def _searcher(work: Path) -> TantivyChannel:
    return TantivyChannel([(TantivyCollection(NAME, _directory(work)), frozenset())],
                          work / "tantivy")


def _rss() -> dict[str, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) / 1024
    fields["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return fields


def child(phase: str, work: Path, size: int) -> dict[str, Any]:
    if phase in ("build", "incremental"):
        records = corpus(work, size)
        generation = 1 if phase == "build" else 2
        view = MemoryBranch(records if phase == "build" else incremented(records), generation)
        base_rss = _rss()["VmRSS"]
        cpu, wall = time.process_time(), time.perf_counter()
        applied = TantivyCollection(NAME, _directory(work)).refresh(view)  # type: ignore[arg-type]
        return {"applied": applied, "cpu_s": time.process_time() - cpu,
                "wall_s": time.perf_counter() - wall, "rss_before_mib": base_rss,
                "peak_rss_mib": _rss()["peak"]}
    # the query process holds no corpus: its long queries were written by the parent
    short = _plans(short_queries())
    long = _plans(json.loads((work / "long-queries.json").read_text()))
    cpu, wall = time.process_time(), time.perf_counter()
    searcher = _searcher(work)
    terms, weights = short[0]
    searcher.search(terms, 10, weights=weights)
    first = {"first_cpu_s": time.process_time() - cpu, "first_wall_s": time.perf_counter() - wall}
    timings: dict[str, list[float]] = {"short": [], "long": []}
    hits: dict[str, list[list[str]]] = {"short": [], "long": [], "files": []}
    for label, plans in (("short", short), ("long", long)):
        for terms, weights in plans:
            started = time.process_time()
            found, _, files = searcher.search_with_files(terms, 10, 5, weights=weights)
            timings[label].append(time.process_time() - started)
            hits[label].append([h.id for h in found])
            if label == "short":
                hits["files"].append([h.id for h in files.best_chunks])
    result = {**first, "rss": _rss(), "hits": hits}
    for label, values in timings.items():
        ordered = sorted(values)
        result[f"{label}_p50_ms"] = 1000 * statistics.median(ordered)
        result[f"{label}_p95_ms"] = 1000 * ordered[int(0.95 * (len(ordered) - 1))]
    return result


def _run_child(phase: str, work: Path, size: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", phase,
                          "--work", str(work), "--size", str(size)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _disk_mib(directory: Path) -> float:
    files = [*directory.rglob("*"), *directory.with_name(f"{directory.name}.files").rglob("*")]
    return sum(f.stat().st_size for f in files if f.is_file()) / 2**20


# -- quality ----------------------------------------------------------------------------------
def overlap(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> float:
    shares = [len(set(x) & set(y)) / max(len(x), len(y)) for x, y in zip(a, b, strict=True)
              if x or y]
    return statistics.mean(shares) if shares else 1.0


def cosqa_mrr(work: Path) -> float:
    data = json.loads(COSQA.read_text())
    rows = [{"path": f"cosqa/{key}.py", "symbol": key, "kind": "function", "signature": "",
             "start": 1, "end": 1, "text": text, "ordinal": 0}
            for key, text in data["corpus"].items()]
    records = [_record(row) for row in rows]
    directory = work / "cosqa-tantivy" / NAME
    for old in (directory, directory.with_name(f"{directory.name}.files")):
        shutil.rmtree(old, ignore_errors=True)
    collection = TantivyCollection(NAME, directory)
    collection.refresh(MemoryBranch(records, 1))  # type: ignore[arg-type]
    engine = TantivyChannel([(collection, frozenset())], None)
    by_id = {r.id: r.symbol for r in records}
    ranks = []
    for key, text in data["queries"].items():
        plan = plan_query(text)
        found, _ = engine.search(plan.terms, 10, weights=plan.weights)
        relevant = set(data["qrels"].get(key, {}))
        rank = next((i for i, h in enumerate(found, 1) if by_id[h.id] in relevant), None)
        ranks.append(1.0 / rank if rank else 0.0)
    return statistics.mean(ranks)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-lexical"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--hits", type=Path, help="write each query's hits here")
    parser.add_argument("--against", type=Path, help="hits of an earlier run to compare")
    parser.add_argument("--child", choices=("build", "incremental", "query"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.work, args.size)))
        return
    records = corpus(args.work, args.size)
    print(f"corpus: {len(records)} chunks of {len({r.path for r in records})} files "
          f"from {STDLIB} and {SITE_PACKAGES}")
    (args.work / "long-queries.json").write_text(json.dumps(long_queries(records)))
    del records
    directory = _directory(args.work)
    for old in (directory, directory.with_name(f"{directory.name}.files")):
        shutil.rmtree(old, ignore_errors=True)
    build = _run_child("build", args.work, args.size)
    query = _run_child("query", args.work, args.size)
    incremental = _run_child("incremental", args.work, args.size)
    figures = {"build": build, "query": query, "incremental": incremental,
               "disk_mib": _disk_mib(directory)}
    _print(figures)
    hits = query.pop("hits")
    quality: dict[str, float] = {"cosqa_lexical_mrr10": cosqa_mrr(args.work)}
    if args.against:
        earlier = json.loads(args.against.read_text())
        quality |= {f"{label}_overlap_with_earlier": overlap(earlier[label], hits[label])
                    for label in ("short", "long", "files")}
    print(json.dumps(quality, indent=1))
    if args.hits:
        args.hits.write_text(json.dumps(hits))
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "quality": quality}, indent=1))


def _print(figures: dict[str, Any]) -> None:
    rows = [
        ("full build wall / CPU s", lambda f: f"{f['build']['wall_s']:.1f} / "
                                              f"{f['build']['cpu_s']:.1f}"),
        ("build peak RSS MiB (corpus held)", lambda f: f"{f['build']['peak_rss_mib']:.0f} "
                                                       f"({f['build']['rss_before_mib']:.0f})"),
        ("10-file incremental CPU s / peak MiB",
         lambda f: f"{f['incremental']['cpu_s']:.2f} / {f['incremental']['peak_rss_mib']:.0f}"),
        ("first query, new process CPU / wall s",
         lambda f: f"{f['query']['first_cpu_s']:.3f} / {f['query']['first_wall_s']:.3f}"),
        ("short query CPU p50 / p95 ms",
         lambda f: f"{f['query']['short_p50_ms']:.1f} / {f['query']['short_p95_ms']:.1f}"),
        ("long query CPU p50 / p95 ms",
         lambda f: f"{f['query']['long_p50_ms']:.1f} / {f['query']['long_p95_ms']:.1f}"),
        ("query process RSS / anon MiB",
         lambda f: f"{f['query']['rss']['VmRSS']:.0f} / {f['query']['rss']['RssAnon']:.0f}"),
        ("on disk MiB (chunk and file indexes)", lambda f: f"{f['disk_mib']:.0f}"),
    ]
    for label, cell in rows:
        print(f"{label:40} {cell(figures):>18}")


if __name__ == "__main__":
    main()

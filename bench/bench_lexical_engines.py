"""The two lexical engines on one corpus: today's numpy BM25 (``bm25``) and tantivy.

Corpus: the Python standard library, then the virtualenv's site-packages (real code, distinct
files), chunked by freshmark's ``chunk_text`` up to ``--size`` chunks (cached as JSON lines
under ``--work``).
Each engine is driven through its own catch-up path (``LexicalIndex.refresh`` /
``TantivyCollection.refresh``) from a branch view over those records held in memory, so no
Chroma store is involved: what is measured is the engine alone.

Per engine, each phase in a fresh process: full build (wall, CPU, peak RSS; bm25 includes
writing its snapshot, tantivy its commit), a 10-file incremental catch-up in a new process
(bm25: load the snapshot, apply, save under its 2 % rule; tantivy: open, apply, commit), the
first query in a new process (open + answer), short (CoSQA questions) and long (issue-sized,
weighted by ``plan_query``) query CPU p50/p95, the query process's RSS after all queries (and
its anonymous part: tantivy's segments are file-backed maps), and the size on disk. Quality:
top-10 overlap between the engines on those queries, whole-file top-5 overlap, and lexical MRR@10
on CoSQA (552 snippets, 313 questions) for each engine.

Usage::

    .venv/bin/python bench/bench_lexical_engines.py [--size 100000] [--work DIR] [--json OUT]
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

from freshmark.adapters.lexical.index import LexicalIndex, collection_identity
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
ENGINES = ("bm25", "tantivy")
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


# -- one engine in this process ---------------------------------------------------------------
def _paths(work: Path) -> tuple[Path, Path]:
    return work / "bm25" / f"{NAME}.npz", work / "tantivy" / NAME


def _searcher(engine: str, work: Path) -> Any:
    snapshot, directory = _paths(work)
    if engine == "bm25":
        return LexicalIndex.load(snapshot, NAME, collection_identity(MemoryBranch([], 1)))
    return TantivyChannel([(TantivyCollection(NAME, directory), frozenset())], work / "tantivy")


def _rss() -> dict[str, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) / 1024
    fields["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return fields


def child(phase: str, engine: str, work: Path, size: int) -> dict[str, Any]:
    snapshot, directory = _paths(work)
    if phase in ("build", "incremental"):
        records = corpus(work, size)
        generation = 1 if phase == "build" else 2
        view = MemoryBranch(records if phase == "build" else incremented(records), generation)
        base_rss = _rss()["VmRSS"]
        cpu, wall = time.process_time(), time.perf_counter()
        if engine == "bm25":
            index = LexicalIndex.load(snapshot, NAME, collection_identity(view)) or \
                LexicalIndex(NAME, collection_identity(view))
            applied = index.refresh(view)  # type: ignore[arg-type]
            if phase == "build" or index.unsaved_changes * 50 >= len(index):
                index.save(snapshot)
        else:
            applied = TantivyCollection(NAME, directory).refresh(view)  # type: ignore[arg-type]
        return {"applied": applied, "cpu_s": time.process_time() - cpu,
                "wall_s": time.perf_counter() - wall, "rss_before_mib": base_rss,
                "peak_rss_mib": _rss()["peak"]}
    # the query process holds no corpus: its long queries were written by the parent
    short = _plans(short_queries())
    long = _plans(json.loads((work / "long-queries.json").read_text()))
    cpu, wall = time.process_time(), time.perf_counter()
    searcher = _searcher(engine, work)
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


def _run_child(phase: str, engine: str, work: Path, size: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", phase, "--engine", engine,
                          "--work", str(work), "--size", str(size)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _disk_mib(path: Path) -> float:
    files = [path] if path.is_file() else list(path.rglob("*"))
    return sum(f.stat().st_size for f in files if f.is_file()) / 2**20


# -- quality ----------------------------------------------------------------------------------
def overlap(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> float:
    shares = [len(set(x) & set(y)) / max(len(x), len(y)) for x, y in zip(a, b, strict=True)
              if x or y]
    return statistics.mean(shares) if shares else 1.0


def cosqa_mrr(work: Path) -> dict[str, float]:
    data = json.loads(COSQA.read_text())
    rows = [{"path": f"cosqa/{key}.py", "symbol": key, "kind": "function", "signature": "",
             "start": 1, "end": 1, "text": text, "ordinal": 0}
            for key, text in data["corpus"].items()]
    records = [_record(row) for row in rows]
    view = MemoryBranch(records, 1)
    bm25 = LexicalIndex(NAME)
    bm25.refresh(view)  # type: ignore[arg-type]
    collection = TantivyCollection(NAME, work / "cosqa-tantivy" / NAME)
    collection.refresh(view)  # type: ignore[arg-type]
    engines = {"bm25": bm25, "tantivy": TantivyChannel([(collection, frozenset())], None)}
    by_id = {r.id: r.symbol for r in records}
    scores = {}
    for name, engine in engines.items():
        ranks = []
        for key, text in data["queries"].items():
            plan = plan_query(text)
            found, _ = engine.search(plan.terms, 10, weights=plan.weights)
            relevant = set(data["qrels"].get(key, {}))
            rank = next((i for i, h in enumerate(found, 1) if by_id[h.id] in relevant), None)
            ranks.append(1.0 / rank if rank else 0.0)
        scores[name] = statistics.mean(ranks)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-lexical-engines"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", choices=("build", "incremental", "query"))
    parser.add_argument("--engine", choices=ENGINES)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.engine, args.work, args.size)))
        return
    records = corpus(args.work, args.size)
    print(f"corpus: {len(records)} chunks of {len({r.path for r in records})} files "
          f"from {STDLIB} and {SITE_PACKAGES}")
    (args.work / "long-queries.json").write_text(json.dumps(long_queries(records)))
    del records
    for path in _paths(args.work):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    figures: dict[str, dict[str, Any]] = {}
    for engine in ENGINES:
        build = _run_child("build", engine, args.work, args.size)
        query = _run_child("query", engine, args.work, args.size)
        incremental = _run_child("incremental", engine, args.work, args.size)
        figures[engine] = {"build": build, "query": query, "incremental": incremental,
                           "disk_mib": _disk_mib(_paths(args.work)[ENGINES.index(engine)])}
    _print(figures)
    hits = {e: figures[e]["query"].pop("hits") for e in ENGINES}
    quality = {
        "top10_overlap_short": overlap(hits["bm25"]["short"], hits["tantivy"]["short"]),
        "top10_overlap_long": overlap(hits["bm25"]["long"], hits["tantivy"]["long"]),
        "top5_files_overlap_short": overlap(hits["bm25"]["files"], hits["tantivy"]["files"]),
        "cosqa_lexical_mrr10": cosqa_mrr(args.work),
    }
    print(json.dumps(quality, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "quality": quality}, indent=1))


def _print(figures: dict[str, dict[str, Any]]) -> None:
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
        ("on disk MiB", lambda f: f"{f['disk_mib']:.0f}"),
    ]
    print(f"{'':40} {'bm25':>18} {'tantivy':>18}")
    for label, cell in rows:
        print(f"{label:40} {cell(figures['bm25']):>18} {cell(figures['tantivy']):>18}")


if __name__ == "__main__":
    main()

"""Chunking throughput on real source: the installed celery and chromadb packages, plus any
JavaScript/TypeScript and C/C++ shipped in site-packages.

Usage: .venv/bin/python bench/bench_chunking.py [PATH ...] [--repeat N] [--max-lines N]
Prints MB/s, files/s and chunks/s for parsing+chunking (one core), and the parse-only rate
for comparison. Without paths it scans site-packages of the running interpreter.
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.languages import detect_language, parser_for

_DEFAULT_PACKAGES = ("celery", "chromadb")
_EXTRA_SUFFIXES = (".js", ".mjs", ".ts", ".tsx", ".c", ".h", ".cpp", ".hpp", ".go", ".rs")
_MAX_FILE_BYTES = 2_000_000


def default_files() -> list[Path]:
    site = Path(sysconfig.get_paths()["purelib"])
    files: list[Path] = []
    for package in _DEFAULT_PACKAGES:
        files.extend(sorted((site / package).rglob("*.py")))
    for root, _dirs, names in os.walk(site):
        files.extend(Path(root) / n for n in sorted(names) if n.endswith(_EXTRA_SUFFIXES))
    return files


def load(files: list[Path]) -> list[tuple[str, str]]:
    sources = []
    for path in files:
        if detect_language(str(path)) is None or path.stat().st_size > _MAX_FILE_BYTES:
            continue
        sources.append((str(path), path.read_text(encoding="utf-8", errors="replace")))
    return sources


def run(sources: list[tuple[str, str]], repeat: int, max_lines: int) -> None:
    total_bytes = sum(len(text.encode("utf-8")) for _, text in sources)
    languages = Counter(detect_language(path) for path, _ in sources)
    print(f"files: {len(sources)}  size: {total_bytes / 1e6:.2f} MB  languages: {dict(languages)}")

    started = time.perf_counter()
    for _ in range(repeat):
        for path, text in sources:
            parser_for(detect_language(path) or "").parse(text.encode("utf-8"))
    parse_seconds = (time.perf_counter() - started) / repeat

    chunk_count = 0
    parts = 0
    started = time.perf_counter()
    for _ in range(repeat):
        chunk_count = 0
        parts = 0
        for path, text in sources:
            chunks = chunk_text(path, text, max_lines=max_lines)
            chunk_count += len(chunks)
            parts += sum(1 for c in chunks if c.part)
    chunk_seconds = (time.perf_counter() - started) / repeat

    megabytes = total_bytes / 1e6
    print(f"parse only:      {megabytes / parse_seconds:8.2f} MB/s  ({parse_seconds:.3f} s)")
    print(
        f"parse + chunk:   {megabytes / chunk_seconds:8.2f} MB/s  "
        f"{len(sources) / chunk_seconds:8.1f} files/s  {chunk_count / chunk_seconds:9.1f} chunks/s"
        f"  ({chunk_seconds:.3f} s)"
    )
    print(f"chunks: {chunk_count}  split parts: {parts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-lines", type=int, default=150)
    args = parser.parse_args()
    files: list[Path] = []
    for path in args.paths:
        files.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    run(load(files or default_files()), args.repeat, args.max_lines)


if __name__ == "__main__":
    main()

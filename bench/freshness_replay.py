"""The pieces of ``bench_freshness.py`` that do not drive the cluster: the replayed history, the
symbol each commit changed, the ``/metrics`` samples and the promtool test built from them."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import CONTAINER_KINDS

_HUNK_RE = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
SAMPLED = ("freshmark_stale_chunks", "freshmark_tracked_chunks", "freshmark_commits_behind",
           "freshmark_layer_interval_seconds", "freshmark_audit_timestamp_seconds")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True,
                          text=True, check=True).stdout.strip()


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    time_seconds: int
    files_changed: int
    # (path, symbol) of a function or class the commit changed, or None (no Python code changed)
    target: tuple[str, str] | None


def first_parent_commits(mirror: Path, count: int, skip: int = 0) -> tuple[str, list[Commit]]:
    """The ``count`` first-parent commits that follow the base commit, oldest first, ending
    ``skip`` commits before the head; returns (base sha, commits)."""
    lines = git(mirror, "log", "--first-parent", f"-{count + 1 + skip}", "--format=%H %P %ct",
                "HEAD").splitlines()[skip:]
    rows = [line.split() for line in reversed(lines)]
    base, commits = rows[0][0], []
    for sha, parent, *_, stamp in rows[1:]:
        files = [f for f in git(mirror, "diff", "--name-only", parent, sha).splitlines() if f]
        commits.append(Commit(sha, parent, int(stamp), len(files),
                              changed_symbol(mirror, parent, sha)))
    return base, commits


def changed_symbol(mirror: Path, parent: str, sha: str) -> tuple[str, str] | None:
    """The chunk symbol of a function or method in a ``.py`` file (not a test) whose lines the
    commit changed, as the indexer chunks it: the smallest chunk holding a changed line, the
    longest name first on ties."""
    diff = git(mirror, "diff", "-U0", "--no-renames", "--diff-filter=AM", parent, sha, "--",
               "*.py", ":!tests/**", ":!docs/**")
    best: tuple[int, int, str, str] | None = None
    for path, body in _file_diffs(diff):
        lines = _new_lines(body)
        if not lines:
            continue
        for chunk in chunk_text(path, git(mirror, "show", f"{sha}:{path}")):
            start, end = chunk.start_line, chunk.end_line
            if chunk.kind in CONTAINER_KINDS or chunk.symbol.startswith("<") \
                    or not any(start <= n <= end for n in lines):
                continue
            key = (end - start, -len(chunk.symbol), path, chunk.symbol)
            if best is None or key < best:
                best = key
    return (best[2], best[3]) if best else None


def defines(mirror: Path, commit: str, path: str, symbol: str) -> bool:
    """Whether ``path`` at ``commit`` holds a chunk named ``symbol``, chunked as the indexer
    does: a push whose symbol a later commit removed before the run that coalesced both is
    superseded, not lost (it can never be found ``current`` at that run's stamp)."""
    shown = subprocess.run(["git", "--git-dir", str(mirror), "show", f"{commit}:{path}"],
                           capture_output=True, text=True)
    if shown.returncode != 0:  # the file is gone at that commit
        return False
    return any(chunk.symbol == symbol for chunk in chunk_text(path, shown.stdout))


def _file_diffs(diff: str) -> list[tuple[str, str]]:
    parts = re.split(r"^diff --git a/\S+ b/(\S+)\n", diff, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def _new_lines(body: str) -> set[int]:
    lines: set[int] = set()
    for match in _HUNK_RE.finditer(body):
        start, length = int(match.group(1)), int(match.group(2) or 1)
        lines.update(range(start, start + length))
    return lines


@dataclass
class Sample:
    """One scrape of ``/metrics``: seconds since the start, per-layer gauges, queue lengths."""

    t_seconds: float
    gauges: dict[tuple[str, str], float] = field(default_factory=dict)  # (name, layer) -> value
    queues: dict[str, float] = field(default_factory=dict)
    coalesced_total: float = 0.0

    def ratio(self, layer: str) -> float:
        tracked = self.gauges.get(("freshmark_tracked_chunks", layer), 0.0)
        return self.gauges.get(("freshmark_stale_chunks", layer), 0.0) / max(tracked, 1.0)


def parse_metrics(text: str, t_seconds: float, repo: str) -> Sample:
    sample = Sample(t_seconds)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in SAMPLED and s.labels.get("repo") == repo:
                sample.gauges[(s.name, s.labels["layer"])] = s.value
            elif s.name == "freshmark_queue_length":
                sample.queues[s.labels["queue"]] = s.value
            elif s.name == "freshmark_jobs_coalesced_total":
                sample.coalesced_total += s.value
    return sample


def promtool_test(samples: list[Sample], repo: str, layers: list[str], rules: Path,
                  expect_firing: bool, name: str, *, repeat: int = 1,
                  hold_last_seconds: int = 0) -> str:
    """A ``promtool test rules`` file: the sampled freshness gauges as 1 s series, played
    ``repeat`` times in a row (a steady state kept up), the last sample then held
    ``hold_last_seconds`` (a state that does not change, e.g. workers stopped), and whether
    ``FreshmarkHotLayerStale`` fires at the end."""
    out = [f"rule_files:\n- {rules}", "evaluation_interval: 1s", "tests:",
           f"- name: {name}", "  interval: 1s", "  input_series:"]
    for metric in ("freshmark_stale_chunks", "freshmark_tracked_chunks",
                   "freshmark_layer_interval_seconds"):
        for layer in layers:
            values = [_value(s, metric, layer) for s in samples] * repeat
            text = " ".join(values)
            if hold_last_seconds and values[-1] != "_":
                text += f" {values[-1]}+0x{hold_last_seconds}"
            out += [f'  - series: {metric}{{repo="{repo}",branch="main",layer="{layer}"}}',
                    f"    values: '{text}'"]
    end_seconds = len(samples) * repeat - 1 + hold_last_seconds
    # The hot layer's alert only: a second layer rebuilt at least hourly is judged as hot too.
    firing = ('count(ALERTS{alertname="FreshmarkHotLayerStale",alertstate="firing",'
              'layer="hot"}) or vector(0)')
    out += ["  promql_expr_test:", f"  - expr: '{firing}'", f"    eval_time: {end_seconds}s",
            "    exp_samples:", "    - labels: '{}'", f"      value: {int(expect_firing)}"]
    return "\n".join(out) + "\n"


def _value(sample: Sample, metric: str, layer: str) -> str:
    value = sample.gauges.get((metric, layer))
    return "_" if value is None else f"{value:g}"


def run_promtool(path: Path) -> tuple[bool, str]:
    done = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True,
                          text=True)
    return done.returncode == 0, (done.stdout + done.stderr).strip()[-1500:]

"""``freshmark audit``: freshness per repo, branch and layer, on demand (and published)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from freshmark.faces.cli.common import named_branch

if TYPE_CHECKING:  # prometheus_client is imported only by the commands that publish
    from freshmark.adapters.telemetry.freshness import FreshnessRow


_COLUMNS = ("REPO", "BRANCH", "LAYER", "STALE", "TRACKED", "RATIO", "BEHIND", "LAG",
            "TOMBSTONED", "LAST SUCCESS")


def _duration(seconds: float) -> str:
    """A short human duration: 0s, 42s, 17m, 5h, 3d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _cells(row: FreshnessRow) -> tuple[str, ...]:
    last = row.layer_last_success_timestamp_seconds
    last_text = "never"
    if last:
        last_text = _duration(max(0.0, row.audit_timestamp_seconds - last)) + " ago"
    return (
        row.repo, row.branch, row.layer, str(row.stale_chunks), str(row.tracked_chunks),
        f"{row.stale_ratio:.1%}", str(row.commits_behind), _duration(row.index_lag_seconds),
        str(row.tombstoned_chunks), last_text,
    )


def format_table(rows: list[FreshnessRow]) -> str:
    """Aligned text columns, one line per (repo, branch, layer)."""
    table = [_COLUMNS, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    )


def _refresh_heads(settings: Any, config: Any, store: Any, target: str | None) -> dict[str, Any]:
    """Fetch the remotes of the configured repositories audited (``status`` does the same), so
    both measure against the remote's heads; repo name -> ``HeadSource``."""
    from freshmark.services.repos import resolve_repo
    from freshmark.services.upkeep.heads import refresh_heads

    if target is not None:
        handle = resolve_repo(target, settings, config, store)
        ids = [handle.repo_id] if handle.repo_id else []
    else:
        ids = sorted({m.repo_key.removeprefix("id:") for m in store.list_manifests()
                      if m.repo_key.startswith("id:")})
    return {repo_id: refresh_heads(settings, config, repo_id) for repo_id in ids}


def _print_overlays(overlays: dict[tuple[str, str], dict[str, Any]]) -> None:
    for (repo, branch), overlay in sorted(overlays.items()):
        click.echo(f"overlay {repo}@{branch}: on {overlay['base_branch']}, "
                   f"{overlay['own_chunks']} chunks of {overlay['own_paths']} files of its own")


def _print_sources(sources: dict[str, Any]) -> None:
    import time

    now = time.time()
    for repo_id, source in sorted(sources.items()):
        click.echo(f"{repo_id}: branch heads are the {source.describe(now)}")


def _run(target: str | None, branch: str | None, config_file: Path | None, as_json: bool,
         publish: bool) -> None:
    from freshmark.adapters.store.chroma import Store
    from freshmark.adapters.telemetry.freshness import freshness_store_for
    from freshmark.core.errors import NotIndexed
    from freshmark.faces.cli.common import emit_json, load_settings
    from freshmark.services.upkeep.audit import audit, publish_report
    from freshmark.services.upkeep.drop import BranchState
    from freshmark.services.upkeep.heads import LOCAL, HeadSource

    settings, config = load_settings(config_file)
    freshness = freshness_store_for(settings)
    store = Store.open(settings)
    sources = _refresh_heads(settings, config, store, target)
    report = audit(settings, config, target=target, branch=branch, freshness=freshness,
                   store=store, retire=BranchState.open(settings, store, config=config))
    for repo, gone, retired in report.gone:
        click.echo(f"freshmark: note: {repo}@{gone} was deleted from the repository; "
                   + ("its index was dropped" if retired else
                      "its index is kept while branch overlays are layered on it"), err=True)
    if not report.rows and not report.problems and not report.gone:
        what = " ".join(filter(None, [target, f"branch {branch}" if branch else None]))
        raise NotIndexed(f"nothing indexed{' for ' + what if what else ''}; run: freshmark index")
    if publish:
        publish_report(freshness, report, full=target is None and branch is None)
    if as_json:
        local = HeadSource(LOCAL)
        emit_json([{**row.to_json(), **sources.get(row.repo, local).to_json(),
                    "overlay": report.overlays.get((row.repo, row.branch))}
                   for row in report.rows])
    elif report.rows:
        click.echo(format_table(report.rows))
        _print_overlays(report.overlays)
        _print_sources(sources)
    for problem in report.problems:
        click.echo(f"freshmark: warning: {problem}", err=True)
    if report.problems:
        sys.exit(1)


_EXAMPLES = """\b
Examples:
  freshmark audit
  freshmark audit shop --branch main --json
  freshmark audit --by-dir          # where agents met stale code, and layer advice"""

_DIR_COLUMNS = ("DIR", "REPO", "BRANCH", "RESULTS", "CHANGED", "HISTORICAL", "STALE")


def _run_by_dir(target: str | None, branch: str | None, config_file: Path | None,
                as_json: bool, publish: bool) -> None:
    from freshmark.adapters.store.chroma import Store
    from freshmark.faces.cli.common import emit_json, load_settings
    from freshmark.services.upkeep.dir_report import directory_report

    settings, config = load_settings(config_file)
    report = directory_report(settings, config, Store.open(settings), target=target,
                              branch=branch)
    if publish and target is None and branch is None and settings.redis_url_set:
        import redis

        from freshmark.adapters.telemetry.layer_advice import publish_advice

        publish_advice(redis.Redis.from_url(settings.redis_url), report.advice)
    if as_json:
        emit_json(report.to_dict())
        return
    if not report.rows:
        click.echo("no verdicts recorded yet: search, verify and context record them")
        return
    table = [_DIR_COLUMNS, *((r.directory, r.repo, r.branch, str(r.total),
                              str(r.counts.get("changed", 0)),
                              str(r.counts.get("historical", 0)), f"{r.stale_share:.1%}")
                             for r in report.rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_DIR_COLUMNS))]
    for line in table:
        click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    for advice in report.advice:
        click.echo(f"advice: {advice.text()}")


def _command(clean: Callable[[Any], Any]) -> click.Command:
    @click.command("audit", epilog=_EXAMPLES)
    @click.argument("target", required=False)
    @click.option("--branch", "-b", callback=named_branch,
                  help="Only this branch (default: every indexed branch).")
    @click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
                  help="TOML config for layer intervals (default: $FRESHMARK_CONFIG).")
    @click.option("--json", "as_json", is_flag=True,
                  help="Print a JSON array, one object per repo, branch and layer.")
    @click.option("--publish/--no-publish", default=True, show_default=True,
                  help="Publish the rows for /metrics (Redis with FRESHMARK_REDIS_URL, else a "
                       "file under FRESHMARK_HOME/state); with --by-dir over everything, the "
                       "layer advice for a scheduler with adapt_layer_intervals (Redis only).")
    @click.option("--by-dir", "by_dir", is_flag=True,
                  help="Instead: verdicts given at use time per directory (changed and "
                       "historical results: where agents met stale code), and which layer "
                       "should rebuild more often.")
    @clean
    def audit_command(target: str | None, branch: str | None, config_file: Path | None,
                      as_json: bool, publish: bool, by_dir: bool) -> None:
        """How stale the index is, per repo, branch and layer.

        TARGET is a repository path or repo id (default: everything indexed). Columns:
        live chunks whose file changed or vanished at the branch head (STALE) out of all live
        chunks (TRACKED), commits behind the head, lag since the first unindexed commit,
        tombstoned chunks and the layer's last successful run. A branch deleted from the
        repository is noted and its index dropped. Exits 1 when a branch could not be audited
        (each named on stderr).
        """
        if by_dir:
            _run_by_dir(target, branch, config_file, as_json, publish)
            return
        _run(target, branch, config_file, as_json, publish)

    return audit_command


def register(cli: click.Group) -> None:
    """Add ``audit`` to the main command group."""
    from freshmark.faces.cli.common import fail_cleanly

    cli.add_command(_command(fail_cleanly))

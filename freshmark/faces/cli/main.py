"""The ``freshmark`` command line: index, status, chunks (plus search, cluster and audit commands).

Every command takes ``--json`` for machines; errors are one line on stderr with a non-zero exit
(2: bad input or state, fix and re-run; 3: a service is down, retry later).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from freshmark.core.config import Config
from freshmark.core.globs import glob_match
from freshmark.core.manifest import Manifest
from freshmark.core.settings import Settings
from freshmark.faces.cli import answers as answer_commands
from freshmark.faces.cli import audit as audit_commands
from freshmark.faces.cli import cluster as cluster_commands
from freshmark.faces.cli import search as search_commands
from freshmark.faces.cli import shards as shard_commands
from freshmark.faces.cli.common import (
    EPILOG,
    Freshmark,
    counted,
    emit_json,
    examples,
    fail_cleanly,
    index_progress,
    load_settings,
    named_branch,
)


@click.group(cls=Freshmark, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="freshmark")
def cli() -> None:
    """freshmark keeps a version-stamped, per-branch code index fresh and hands coding agents
    only what is still true: every result is verified against the current code and labelled.

    \b
    Quick start (embedded, no servers), inside a git repository:
      freshmark index                index its checked-out branch (or: freshmark index PATH)
      freshmark status               what is indexed and how far behind the head it is
      freshmark search QUERY         search it (or --repo PATH, from anywhere)
    """


# -- index ------------------------------------------------------------------------------------
def _print_summary(summary: dict[str, Any]) -> None:
    skipped = ", ".join(f"{n} {r}" for r, n in sorted(summary["files_skipped"].items())) or "none"
    lines = [
        f"{summary['repo']}@{summary['branch']} -> {summary['commit'][:12]}"
        + (" (already up to date)" if summary["noop"] else ""),
        f"  files:      {summary['files_seen']} seen, {summary['files_changed']} changed, "
        f"skipped: {skipped}",
        f"  chunks:     {summary['chunks_added']} added, {summary['chunks_updated']} updated, "
        f"{summary['chunks_unchanged']} unchanged, {summary['chunks_tombstoned']} tombstoned",
        f"  embeddings: {summary['embeddings_computed']} computed, "
        f"{summary['embeddings_reused']} reused ({summary['embedder']})",
        f"  time:       {summary['seconds']:.2f} s ({summary['embed_seconds']:.2f} s embedding)",
    ]
    named = [f"{path} ({reason})" for reason, paths in sorted(summary["skipped_paths"].items())
             for path in paths]
    if named:
        more = sum(summary["files_skipped"].values()) - len(named)
        lines.insert(2, "  not indexed: " + ", ".join(named) + (f" and {more} more" if more > 0
                        else "") + " (`freshmark chunks --path FILE` says why)")
    if summary.get("layered_on"):
        lines.insert(1, f"  overlay on branch {summary['layered_on']}: "
                        f"{summary.get('overlay_chunks') or 0} chunks of its own")
    click.echo("\n".join(lines))


@cli.command(epilog=examples(
    "freshmark index .                       # the checked-out branch, from any subdirectory",
    "freshmark index ~/src/shop -b feature/login --base main",
))
@click.argument("path", required=False, default=".",
                type=click.Path(file_okay=False, path_type=Path))
@click.option("--branch", "-b", callback=named_branch,
              help="Branch to index (default: the checked-out branch).")
@click.option("--base", help="For a branch never indexed: index it as an overlay on this "
              "indexed branch (only the files that differ are stored). Refused (exit 2) when "
              "it is not indexed; noted when the branch is already indexed.")
@click.option("--layer", help="Refresh only this layer (from the config) and stamp only it.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML config (default: $FRESHMARK_CONFIG).",
)
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary as one JSON object (and no progress lines on stderr).")
@fail_cleanly
def index(
    path: Path,
    branch: str | None,
    base: str | None,
    layer: str | None,
    config_file: Path | None,
    as_json: bool,
) -> None:
    """Bring the branch's index to the branch head (incremental after the first run).

    PATH: any directory of the work tree (default: the current one).

    Unchanged files are skipped, changed files re-chunked, only changed chunks re-embedded,
    deleted files tombstoned. A crash or Ctrl-C leaves the previous stamp true; run it again.
    """
    from freshmark.adapters.git.repo import GitRepo
    from freshmark.services.indexing.indexer import IndexRequest, index_repo
    from freshmark.services.upkeep.branch_guard import cli_run_held

    settings, config = load_settings(config_file)
    top_level = GitRepo.discover(path).path  # a subdirectory indexes its whole repository
    with cli_run_held(settings, config, top_level, branch), \
            index_progress(not as_json) as progress:
        request = IndexRequest(top_level, branch=branch, layer=layer, base_branch=base,
                               base_named=base is not None)
        summary = index_repo(request, settings=settings, config=config,
                             progress=progress).to_dict()
    if as_json:
        emit_json(summary)
    else:
        _print_summary(summary)
    if summary.get("base_note"):
        click.echo(f"freshmark: note: {summary['base_note']}", err=True)


# -- status -----------------------------------------------------------------------------------
def _status_rows(
    path: Path, branch: str | None, settings: Settings, config: Config
) -> list[dict[str, Any]]:
    from freshmark.adapters.store.chroma import Store
    from freshmark.services.upkeep.status import branch_status

    store = Store.open(settings)

    def retire(manifest: Manifest) -> bool:
        """Drop a branch deleted from its repository (opened only when there is one)."""
        from freshmark.services.upkeep.drop import BranchState, retire_gone_branch

        return retire_gone_branch(BranchState.open(settings, store, config=config), manifest)

    return branch_status(path, branch, settings=settings, config=config, store=store,
                         retire=retire)


def _status_on_server(repo: str, branch: str | None, settings: Settings,
                      config: Config) -> list[dict[str, Any]]:
    """The configured server's status rows (a gone branch is reported there, not dropped)."""
    import urllib.parse

    from freshmark.faces.cli.remote import ask_about

    route = "/v1/repos/{repo}/status"
    if branch:
        route += "?" + urllib.parse.urlencode({"branch": branch})
    return list(ask_about(repo, settings, config, route)["branches"])


def _head_label(behind: dict[str, Any]) -> str:
    """``abc123def456 (remote's, fetched just now)``: the head and where it was read."""
    import time

    from freshmark.services.upkeep.heads import HeadSource

    source = HeadSource(behind["head_source"], behind["head_fetched_at_seconds"],
                        behind["head_fetch_error"])
    return f"{behind['head'][:12]} ({source.describe(time.time())})"


def _print_status(row: dict[str, Any]) -> None:
    if row["gone"]:
        what = "its index was dropped" if row["retired"] else \
            "its index is kept while branch overlays are layered on it"
        click.echo(f"{row['repo']}@{row['branch']}  gone: deleted from the repository; {what}")
        return
    behind = row["behind"]
    click.echo(f"{row['repo']}@{row['branch']}  ({row['collection']})")
    click.echo(f"  indexed:    {(row['commit'] or '-')[:12]} at {row['indexed_at'] or '-'}")
    for name, stamp in sorted(row["layers"].items()):
        click.echo(f"  layer {name}: {stamp['commit'][:12]} at {stamp['indexed_at']}")
    click.echo(f"  chunks:     {row['live_chunks']} live, {row['tombstoned_chunks']} tombstoned")
    overlay = row.get("overlay")
    if overlay:
        gone = " (base no longer indexed: the next index run rebuilds it whole)" \
            if overlay["base_missing"] else ""
        if overlay.get("base_moved"):
            gone = (f" (the base was indexed again since: layers "
                    f"{', '.join(overlay['base_moved'])} lag it until this branch's next run; "
                    f"freshmark index -b {row['branch']})")
        click.echo(f"  overlay:    on {overlay['base_branch']}, {overlay['own_chunks']} chunks of "
                   f"{overlay['own_paths']} files of its own{gone}")
    click.echo(f"  embedder:   {row['embedder']}")
    if behind.get("head") and behind.get("commits_behind") is None:
        # No layer is stamped yet: the first build is still writing (or was interrupted).
        click.echo(f"  head:       {_head_label(behind)}: first build in progress or "
                   "interrupted, nothing stamped yet (freshmark index resumes it)")
    elif behind.get("head"):
        click.echo(
            f"  head:       {_head_label(behind)}: {counted(behind['commits_behind'], 'commit')}"
            f", {counted(behind['files_changed'], 'file')} changed since indexing"
        )
    elif behind.get("error"):
        click.echo(f"  head:       unknown ({behind['error']})")
    verdicts = row.get("verdicts") or {}
    if verdicts:
        mix = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
        click.echo(f"  verdicts:   {mix}")


@cli.command(epilog=examples(
    "freshmark status .",
    "freshmark status shop --branch main --json",
))
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--repo", "repo", default=None, type=click.Path(path_type=Path),
              help="The repository, as search takes it (the same as PATH).")
@click.option("--branch", "-b", callback=named_branch,
              help="Only this branch (default: every indexed branch).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per branch.")
@fail_cleanly
def status(path: Path | None, repo: Path | None, branch: str | None, as_json: bool) -> None:
    """Per branch: indexed commit and time, per-layer stamps, chunk counts, embedder,
    how far the index is behind the branch head, and the verdict counts of searches.

    PATH (or --repo): a directory of the work tree or a repository id (default: the current
    directory).
    """
    if path is not None and repo is not None and path != repo:
        raise click.UsageError("name the repository once: PATH or --repo")
    path = path or repo or Path(".")
    settings, config = load_settings()
    if settings.server_url:  # the store and its client are never imported
        rows = _status_on_server(str(path), branch, settings, config)
    else:
        rows = _status_rows(path, branch, settings, config)
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        _print_status(row)


# -- drop -------------------------------------------------------------------------------------
@cli.command(epilog=examples(
    "freshmark drop . --branch feature/old    # one branch",
    "freshmark drop shop                      # every branch of a repository (path or id)",
))
@click.argument("repo")
@click.option("--branch", "-b", callback=named_branch,
              help="Only this branch (default: every indexed branch).")
@click.option("--json", "as_json", is_flag=True, help="Print what was dropped as JSON.")
@fail_cleanly
def drop(repo: str, branch: str | None, as_json: bool) -> None:
    """Delete what was indexed of REPO (a path, even one since moved or deleted, or a repo id):
    the branch collections, lexical snapshots, freshness rows and verdict counts.

    A branch that overlays are layered on is refused (exit 2, naming them): drop them first.
    """
    from freshmark.services.upkeep.drop import BranchState, drop_index

    settings, config = load_settings()
    report = drop_index(repo, branch, settings=settings, config=config,
                        state=BranchState.open(settings, config=config))
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(f"dropped {report.repo}: {', '.join(report.dropped)}")


# -- chunks -----------------------------------------------------------------------------------
@cli.command(epilog=examples(
    "freshmark chunks . --path 'src/orders/**'",
    "freshmark chunks . --all --json          # tombstoned and excluded chunks too",
))
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--branch", "-b", callback=named_branch,
              help="Branch (default: the checked-out branch).")
@click.option("--path", "path_glob",
              help="Only chunks whose path matches this glob (src/**); a plain path reads "
                   "that file's chunks alone, not the whole index.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Include tombstoned chunks and excluded kinds (generated, backup, fixture).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON array of stamps (SPEC §1 field names)."
)
@fail_cleanly
def chunks(
    path: Path, branch: str | None, path_glob: str | None, show_all: bool, as_json: bool
) -> None:
    """List stamped chunks of a branch index.

    PATH: any directory of the work tree (default: the current one).
    """
    from freshmark.adapters.store.chroma import Store
    from freshmark.core.errors import BranchNotFound, NotIndexed
    from freshmark.services.indexing.file_class import why_not_indexed
    from freshmark.services.repos import resolve_repo

    settings, config = load_settings()
    store = Store.open(settings)
    handle = resolve_repo(str(path), settings, config, store)
    repo = handle.open()
    branch = branch or repo.current_branch()
    try:
        index = store.require_branch(handle.key, branch, handle.name)
    except NotIndexed:
        known = sorted(repo.branches())
        if branch in known:
            raise
        raise BranchNotFound(f"no branch {branch[:80]!r} in {handle.name}, indexed or not; "
                             f"known: {', '.join(known[:10]) or 'none'}") from None
    if path_glob and not any(ch in path_glob for ch in "*?["):
        # One file: read its chunks by path, not every chunk of the branch.
        listed = index.records_for_paths([path_glob])
    else:
        listed = list(index.iter_records(where=None if show_all else {"status": "live"},
                                         include_text=False))
    matching = [r for r in listed if not path_glob or glob_match(r.path, path_glob)]
    records = [r for r in matching if show_all or (r.is_live and not r.is_excluded_kind)]
    records.sort(key=lambda r: (r.path, r.start_line, r.symbol))
    if as_json:
        emit_json([r.stamp() for r in records])
        return
    if not records:
        commit = index.manifest.commit
        one_file = path_glob is not None and not any(ch in path_glob for ch in "*?[")
        # Chunks held but of a kind left out by default (jq's generated lexer.c): say which.
        excluded = sorted({r.file_kind for r in matching if r.is_live and r.is_excluded_kind})
        _say_none_listed(f"{handle.name}@{branch}", commit, path_glob, show_all,
                         f"its chunks are {' and '.join(excluded)}, left out unless --all"
                         if excluded else why_not_indexed(repo, commit, path_glob, config.rules)
                         if one_file and path_glob and commit else None)
    for r in records:
        flags = "" if r.is_live else f"  [{r.status} in {(r.tombstoned_in or '')[:7]}]"
        kind = "" if r.file_kind == "source" else f"  ({r.file_kind})"
        where_ = f"{r.path}#L{r.start_line}-L{r.end_line}"
        click.echo(f"{where_}  {r.symbol}  {r.commit[:7]}{kind}{flags}")


def _say_none_listed(label: str, commit: str | None, path_glob: str | None,
                     show_all: bool, not_indexed: str | None = None) -> None:
    """An empty listing says why on stderr, so it is not read as a listing cut short (for one
    file, why it was not indexed: ``not_indexed``)."""
    what = f"matches --path {path_glob!r}" if path_glob else "is listed"
    hints = [not_indexed] if not_indexed else []
    hints += [f"indexed at {commit[:7]}"] if commit else []
    if not show_all:
        hints.append("--all adds tombstoned and excluded chunks")
    why = f" ({'; '.join(hints)})" if hints else ""
    click.echo(f"no chunk of {label} {what}{why}", err=True)


for commands in (search_commands, cluster_commands, audit_commands, answer_commands,
                 shard_commands):
    commands.register(cli)


def main() -> None:
    cli(prog_name="freshmark")


if __name__ == "__main__":
    main()

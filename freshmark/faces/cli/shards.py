"""``freshmark shards plan|move``: bring repositories to their home Chroma server.

Registered into the main ``freshmark`` group by ``register(cli)``. Both read the servers from
``FRESHMARK_CHROMA_URLS`` (or the one ``FRESHMARK_CHROMA_URL``) like every other command.
"""

from __future__ import annotations

import sys

import click

from freshmark.faces.cli.common import examples, fail_cleanly


@click.group(epilog=examples(
    "freshmark shards plan --json     # with FRESHMARK_CHROMA_URLS=http://c0:8000,http://c1:8000",
    "freshmark shards move",
))
def shards() -> None:
    """Where repositories live when the store is several Chroma servers.

    Each repository, all its branches with it, lives on one server chosen by rendezvous
    hashing of its id over FRESHMARK_CHROMA_URLS. After adding a server, `plan` lists the
    repositories it now takes and `move` copies them over, verifies them and deletes the old
    copies; searches keep reading the old copy until each one is switched.
    """


@shards.command(name="plan", epilog=examples(
    "freshmark shards plan",
    "freshmark shards plan --json",
))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per repo.")
@fail_cleanly
def plan_command(as_json: bool) -> None:
    """List the repositories that are not on their home server (nothing: all in place)."""
    from freshmark.adapters.store.chroma import Store
    from freshmark.faces.cli.common import emit_json, load_settings
    from freshmark.services.upkeep.shards import plan

    settings, _ = load_settings()
    pending = plan(Store.open(settings))
    if as_json:
        emit_json([m.to_dict() for m in pending])
        return
    for repo_move in pending:
        sources = sorted({source for _, source in repo_move.collections})
        click.echo(f"{repo_move.repo}: {len(repo_move.collections)} collection(s) "
                   f"{', '.join(sources)} -> {repo_move.target}")
    click.echo(f"{len(pending)} repository(ies) to move")


@shards.command(name="move", epilog=examples(
    "freshmark shards move",
    "freshmark shards move --batch 200 --json",
))
@click.option("--batch", "batch_records", type=click.IntRange(min=1), default=500,
              show_default=True, help="Records read and written at a time.")
@click.option("--json", "as_json", is_flag=True, help="Print what was moved as JSON.")
@fail_cleanly
def move_command(batch_records: int, as_json: bool) -> None:
    """Move every repository `plan` lists to its home server. Safe to stop and run again.
    Exits 1 if a collection was written while being copied (it stays where it was; run
    again)."""
    from freshmark.adapters.store.chroma import Store
    from freshmark.adapters.store.relocate import Relocated
    from freshmark.faces.cli.common import emit_json, load_settings
    from freshmark.services.upkeep.shards import move

    def progress(result: Relocated) -> None:
        if not as_json:
            click.echo(f"{result.name}: {result.outcome} ({result.records} records)")

    settings, _ = load_settings()
    report = move(Store.open(settings), batch_records=batch_records, on_done=progress)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(f"{len(report.relocated)} collection(s) handled, "
                   f"{report.staging_dropped} stale staging copy(ies) dropped")
    if not report.complete:
        sys.exit(1)


def register(cli: click.Group) -> None:
    """Add ``shards`` to the main command group."""
    cli.add_command(shards)

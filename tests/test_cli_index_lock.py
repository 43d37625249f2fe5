"""``freshmark index`` in a deployment with Redis holds its branch's lock as a worker's run
does: a drop (or a worker's run) holding it keeps the CLI's run out, and the CLI's run leaves
it free behind it."""

from __future__ import annotations

from click.testing import CliRunner

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.queue import jobs
from freshmark.faces.cli.main import cli
from freshmark.services.upkeep import branch_guard
from freshmark.services.upkeep.branch_guard import BranchGuard


def test_a_cli_index_run_waits_for_the_lock_a_drop_holds_then_runs_and_frees_it(
        fm_home, make_repo, process_db, monkeypatch):
    repo = make_repo("shop")
    repo.write("shop/orders.py", "def cancel_order(order):\n    return order\n").commit("shop")
    monkeypatch.setenv("FRESHMARK_REDIS_URL", process_db)
    monkeypatch.setattr(branch_guard, "DROP_WAIT_SECONDS", 0.5)
    client = jobs.connect(process_db)
    branch = GitRepo.open(repo.path).current_branch()
    with BranchGuard(client, ("default",)).holding([(GitRepo.open(repo.path).key(), branch)]):
        busy = CliRunner().invoke(cli, ["index", str(repo.path), "--json"])
    assert busy.exit_code == 3 and "busy: an index run holds branch" in busy.output
    done = CliRunner().invoke(cli, ["index", str(repo.path), "--json"])
    assert done.exit_code == 0, done.output
    assert not client.keys("freshmark:lock:*")

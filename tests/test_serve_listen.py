"""``freshmark serve`` binds its address before building the app: a bad one is one clear error."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from freshmark.faces.cli.main import cli


def test_a_port_in_use_is_refused_in_one_line_with_exit_two(fm_home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"freshmark: error: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(another server on it? choose a free one with --port)"]


def test_an_address_not_on_this_host_is_refused(fm_home):
    result = CliRunner().invoke(cli, ["serve", "--host", "192.0.2.1", "--port", "8080"])
    assert result.exit_code == 2
    assert "cannot listen on 192.0.2.1:8080: Cannot assign requested address" in result.stderr

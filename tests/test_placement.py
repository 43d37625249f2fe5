"""Rendezvous placement of repositories on Chroma servers, and the server list in the settings."""

from __future__ import annotations

from collections import Counter

import pytest

from freshmark.core.errors import ConfigError
from freshmark.core.placement import home_index, moves, parse_server, parse_servers
from freshmark.core.settings import Settings

KEYS = [f"path:/srv/repos/project-{n}" for n in range(3000)]
THREE = ["http://chroma-0:8000", "http://chroma-1:8000", "http://chroma-2:8000"]
FOUR = [*THREE, "http://chroma-3:8000"]


def homes(identities: list[str]) -> dict[str, str]:
    return {key: identities[home_index(key, identities)] for key in KEYS}


def test_placement_does_not_depend_on_the_order_servers_are_listed() -> None:
    assert homes(THREE) == homes(list(reversed(THREE)))


def test_adding_a_server_moves_repositories_only_onto_it() -> None:
    before, after = homes(THREE), homes(FOUR)

    moved = {key for key in KEYS if before[key] != after[key]}

    assert moved and all(after[key] == FOUR[3] for key in moved)


def test_adding_a_fourth_server_moves_about_a_quarter() -> None:
    before, after = homes(THREE), homes(FOUR)

    share = sum(before[key] != after[key] for key in KEYS) / len(KEYS)

    assert 0.2 < share < 0.3


def test_removing_a_server_moves_only_its_repositories() -> None:
    before, after = homes(FOUR), homes(THREE)

    assert all(before[key] == FOUR[3] for key in KEYS if before[key] != after[key])


def test_each_of_three_servers_gets_about_a_third() -> None:
    counts = Counter(homes(THREE).values())

    assert all(0.28 < counts[server] / len(KEYS) < 0.39 for server in THREE)


def test_moves_name_each_collection_away_from_its_home() -> None:
    key = KEYS[0]
    home = THREE[home_index(key, THREE)]
    away = next(s for s in THREE if s != home)

    planned = moves([(key, "fm-a", home), (key, "fm-b", away)], THREE)

    assert [(m.collection, m.source, m.target) for m in planned] == [("fm-b", away, home)]


def test_credentials_do_not_change_a_servers_identity() -> None:
    plain = parse_server("http://chroma-0:8000", "V")
    with_password = parse_server("http://admin:s3cret@Chroma-0:8000/", "V")

    assert plain.identity == with_password.identity == "http://chroma-0:8000"


def test_a_url_without_scheme_or_port_is_http_on_8000() -> None:
    server = parse_server("chroma-0", "V")

    assert (server.host, server.port, server.ssl) == ("chroma-0", 8000, False)


def test_the_password_is_kept_out_of_the_servers_repr() -> None:
    assert "s3cret" not in repr(parse_server("https://admin:s3cret@chroma:8443", "V"))


@pytest.mark.parametrize("url", ["ftp://admin:s3cret@chroma:8000", "http://admin:s3cret@:8000",
                                 "http://admin:s3cret@chroma:port"])
def test_a_bad_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_servers([url], "FRESHMARK_CHROMA_URLS")

    assert "FRESHMARK_CHROMA_URLS" in str(caught.value) and "s3cret" not in str(caught.value)


def test_a_user_without_a_password_is_refused() -> None:
    with pytest.raises(ConfigError, match="no password"):
        parse_servers(["http://admin@chroma:8000"], "FRESHMARK_CHROMA_URLS")


def test_the_same_server_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="twice"):
        parse_servers(["http://chroma:8000", "http://u:p@chroma:8000"], "FRESHMARK_CHROMA_URLS")


def test_the_url_list_is_split_on_commas_and_trimmed(tmp_path) -> None:
    env = {"FRESHMARK_HOME": str(tmp_path),
           "FRESHMARK_CHROMA_URLS": " http://c0:8000 ,http://c1:8000"}

    assert Settings.from_env(env).chroma_server_urls == ("http://c0:8000", "http://c1:8000")


def test_the_single_url_is_a_store_of_one_server(tmp_path) -> None:
    env = {"FRESHMARK_HOME": str(tmp_path), "FRESHMARK_CHROMA_URL": "http://c0:8000"}

    assert Settings.from_env(env).chroma_server_urls == ("http://c0:8000",)


def test_an_empty_entry_in_the_url_list_is_refused(tmp_path) -> None:
    env = {"FRESHMARK_HOME": str(tmp_path), "FRESHMARK_CHROMA_URLS": "http://c0:8000,,http://c1"}

    with pytest.raises(ConfigError, match="empty entry"):
        Settings.from_env(env)


def test_setting_both_url_variables_is_refused(tmp_path) -> None:
    env = {"FRESHMARK_HOME": str(tmp_path), "FRESHMARK_CHROMA_URLS": "http://c0:8000",
           "FRESHMARK_CHROMA_URL": "http://c1:8000"}

    with pytest.raises(ConfigError, match="not both"):
        Settings.from_env(env)

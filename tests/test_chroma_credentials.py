"""Credentials in ``FRESHMARK_CHROMA_URL`` reach the Chroma server as HTTP basic auth, and no
message ever shows them. The server is a real ``chroma run`` behind a real HTTP listener that
demands basic auth (``basic_auth_proxy``: Chroma 1.x has no authentication of its own)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from basic_auth_proxy import basic_auth_proxy

from freshmark.adapters.store.chroma import Store
from freshmark.core.errors import ConfigError, StoreUnavailable
from freshmark.core.settings import Settings

USER, PASSWORD = "freshmark", "p@ss:w/rd-0f-chroma"
QUOTED_PASSWORD = "p%40ss%3Aw%2Frd-0f-chroma"  # as it must be written inside a URL


@pytest.fixture
def proxy(chroma_server) -> Iterator[tuple[str, list[str]]]:
    with basic_auth_proxy(chroma_server.url, USER, PASSWORD) as (url, received):
        yield url.removeprefix("http://"), received


def _open(fm_home, monkeypatch, url: str) -> Store:
    monkeypatch.setenv("FRESHMARK_CHROMA_URL", url)
    return Store.open(Settings.from_env())


def test_credentials_in_the_url_are_sent_as_basic_auth(fm_home, monkeypatch, proxy):
    host, received = proxy
    store = _open(fm_home, monkeypatch, f"http://{USER}:{QUOTED_PASSWORD}@{host}")
    store.list_manifests()  # through the proxy, which answers 401 without the credentials
    expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert received and set(received) == {expected}


def test_the_store_location_names_the_url_without_its_credentials(fm_home, monkeypatch, proxy):
    host, _ = proxy
    store = _open(fm_home, monkeypatch, f"http://{USER}:{QUOTED_PASSWORD}@{host}")
    assert store.location == f"http://***@{host}"


def test_wrong_credentials_are_refused_with_a_clear_error_without_them(fm_home, monkeypatch,
                                                                        proxy):
    host, _ = proxy
    with pytest.raises(StoreUnavailable, match="refused access") as raised:
        _open(fm_home, monkeypatch, f"http://{USER}:wrong-pa55@{host}")
    assert "wrong-pa55" not in str(raised.value)


def test_a_server_demanding_credentials_the_url_lacks_says_how_to_give_them(
        fm_home, monkeypatch, proxy):
    host, _ = proxy
    with pytest.raises(StoreUnavailable, match="user:password@host:port"):
        _open(fm_home, monkeypatch, f"http://{host}")


def test_a_user_without_a_password_is_a_config_error(fm_home, monkeypatch):
    with pytest.raises(ConfigError, match="no password") as raised:
        _open(fm_home, monkeypatch, "http://only-a-t0ken@127.0.0.1:1")
    assert "only-a-t0ken" not in str(raised.value)

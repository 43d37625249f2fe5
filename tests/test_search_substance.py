"""Inside a file the question reaches in several places, the definition that does the work
outranks the accessor and the constructor that share the question's words (``substance`` in
``core/fusion.py``), on a repository built and indexed here."""

from __future__ import annotations

import pytest
from search_fixtures import indexed_project

from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.retrieval.search import search

SESSION = '''"""Sessions keep settings across requests."""


class Session:
    """A client session that follows redirects."""

    def __init__(self, max_redirects=30):
        self.max_redirects = max_redirects

    @property
    def redirect_limit(self):
        """The most hops one request may take."""
        return self.max_redirects

    def resolve_redirects(self, response, send):
        """Follow each redirect the server answers with: send the request again."""
        history = []
        while response.status in (301, 302, 303, 307, 308):
            if len(history) >= self.max_redirects:
                raise TooMany(len(history))
            history.append(response)
            target = response.headers["Location"]
            if target.startswith("/"):
                target = response.origin + target
            method = "GET" if response.status == 303 else response.method
            response = send(method, target)
            response.history = list(history)
        return response


class TooMany(Exception):
    pass
'''


@pytest.fixture
def sessions(make_repo, fm_home):
    return indexed_project(make_repo("sessions"), {"client/sessions.py": SESSION},
                           package="client")


def test_the_definition_that_does_the_work_outranks_its_files_accessor(sessions):
    response = search(SearchRequest.build("how does the session follow redirects", k=3),
                      str(sessions.path), settings=Settings.from_env())
    first = response.results[0].record
    assert (first.path, first.symbol) == ("client/sessions.py", "Session.resolve_redirects")

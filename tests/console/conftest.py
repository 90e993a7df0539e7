"""A daemon with a token serving loops whose files, params and results hold hostile text, and
a client of its console that logs in as a browser would (a cookie, the forms' CSRF tokens, its
own Origin)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from loopengine.console._pages import COOKIE
from tests.api.test_app import GATED
from tests.daemon.conftest import Workspace, serving

TOKEN = "s3cret-console-token-7"
SCRIPT = "<script>document.title='pwned'</script>"
IMAGE = "<img src=x onerror=alert(1)>"
LINK = "javascript:alert(1)"
HOSTILE = (SCRIPT, IMAGE, LINK)
"""What a page shows as text, never runs."""
COUNTED = """\
id: counted
trigger: {type: manual}
params:
  n: {type: integer, default: 1, description: "how many <script>alert(1)</script>"}
decide: {decision_tree: [], fallback_action: log_only}
"""
SAYS = f"""\
id: says
trigger: {{type: manual}}
params:
  text: {{type: string, default: "hi"}}
  mode: {{type: string, enum: [fast, "slow <b>"]}}
  loud: {{type: boolean}}
decide: {{decision_tree: [{{condition: "`true`", action: say}}], fallback_action: log_only}}
act:
  actions:
    - {{action_id: say, skill_id: log_only, on: [say],
        params: {{message: "${{ input.text }} {IMAGE}"}}}}
"""
ON_EVENT = """\
id: on_event
trigger: {type: event, config: {event_pattern: "hostile.*"}}
decide: {decision_tree: [], fallback_action: log_only}
"""
SCHEDULED = f"""\
# at night, {SCRIPT}
id: scheduled
trigger: {{type: cron, id: nightly, config: {{expression: "30 2 * * *", timezone: Europe/Paris}}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
"""A loop with a cron trigger (its page plans its fires) whose file holds hostile text."""
HOSTILE_FILE = "<img src=x onerror=alert(1)>.yaml"
"""A loop file whose name the overview shows."""
FROM_FILE = """\
id: from_file
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: log_only}
"""
HELD = """\
id: held
trigger: {type: manual}
params:
  gate: {type: string}
analyze:
  analysis_steps:
    - {name: note, skill_id: log_only, params: {message: "waiting for the gate"}}
decide: {decision_tree: [], fallback_action: wait}
act:
  actions:
    - action_id: wait
      skill_id: shell
      params:
        command: [sh, -c, 'while [ ! -e "$0" ]; do sleep 0.05; done', '${ input.gate }']
        timeout_s: 120
"""
"""A loop whose act phase lasts until the file ``gate`` names exists (it logs a line before)."""
LOOPS = {
    "counted.yaml": COUNTED,
    "held.yaml": HELD,
    "says.yaml": SAYS,
    "gated.yaml": GATED,
    "on_event.yaml": ON_EVENT,
    "scheduled.yaml": SCHEDULED,
    HOSTILE_FILE: FROM_FILE,
}
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Served:
    """The daemon's workspace and the URL it serves."""

    workspace: Workspace
    url: str

    def client(self, **kwargs: Any) -> Console:
        return Console(httpx.Client(base_url=self.url, timeout=30, **kwargs), self.url)


@dataclass
class Console:
    """A client of the console as a browser of its pages: it keeps the cookie and posts with
    the page's Origin."""

    http: httpx.Client
    url: str

    @property
    def cookie(self) -> str:
        """The session cookie's name at this daemon (by its port)."""
        return f"{COOKIE}_{urlsplit(self.url).port}"

    def login(self, token: str = TOKEN, next_page: str = "/") -> httpx.Response:
        return self.http.post(
            "/login", data={"token": token, "next": next_page}, headers={"Origin": self.url}
        )

    def csrf(self, page: str = "/") -> str:
        """The CSRF token of the forms ``page`` shows."""
        found = _CSRF.search(self.http.get(page).text)
        assert found, f"no form on {page}"
        return found.group(1)

    def post(self, path: str, data: dict[str, str], **headers: str) -> httpx.Response:
        """``data`` posted as a form of the console's, its CSRF token added."""
        fields = {"csrf": self.csrf(), **data}
        return self.http.post(path, data=fields, headers={"Origin": self.url, **headers})

    def close(self) -> None:
        self.http.close()


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A daemon with a token, shared by the console's tests."""
    with serving(tmp_path_factory.mktemp("console"), LOOPS, TOKEN) as (workspace, url):
        yield Served(workspace, url)


@pytest.fixture
def console(served: Served) -> Iterator[Console]:
    """A client logged in to the console."""
    client = served.client()
    assert client.login().status_code == 303
    yield client
    client.close()


@pytest.fixture
def anonymous(served: Served) -> Iterator[Console]:
    """A client without a session."""
    client = served.client()
    yield client
    client.close()

"""``/autolearn/*`` on a daemon with ``daemon.autolearn``: it schedules the shipped autolearn
loops beside its folder's, queues a cycle of any of them, and shows what the chat remembers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.testing import FakeLLMServer, answering, reply
from tests.api.test_chat import TOKEN, _start
from tests.daemon.conftest import Workspace
from tests.waiting import wait_until

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True)
class Served:
    workspace: Workspace
    api: str

    def get(self, path: str, **params: str) -> httpx.Response:
        return httpx.get(self.api + path, params=params, headers=HEADERS, timeout=30)

    def post(self, path: str, body: dict[str, Any] | None = None, **params: str) -> httpx.Response:
        return httpx.post(self.api + path, json=body, params=params, headers=HEADERS, timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Every node answers whatever it is asked, so a cycle that fires on its cron is harmless."""
    root: Path = tmp_path_factory.mktemp("autolearn")
    with FakeLLMServer() as llm:
        for model in ("ol1", "m1", "m2"):
            llm.script(model, [answering(lambda _: reply("8"))])
        nodes = "\n".join(
            f"    {name}: {{base_url: '{llm.base_url}', model: {name.lower()}, timeout_s: 5}}"
            for name in ("OL1", "M1", "M2")
        )
        config = (
            'daemon: {port: 0, token: "${ secret.API_TOKEN }", autolearn: true}\n'
            f"cluster:\n  nodes:\n{nodes}\n"
        )
        workspace, daemon, api = _start(root, config)
        try:
            yield Served(workspace, api)
        finally:
            assert daemon.stop() == 0


def test_the_shipped_autolearn_loops_are_scheduled(served: Served) -> None:
    listed = {loop["loop_id"] for loop in served.get("/loops").json()["loops"]}
    assert {"autotune", "autoreview", "memory"} <= listed


def test_a_memory_cycle_queued_over_http_profiles_the_users_who_chatted(served: Served) -> None:
    chatted = served.post("/chat", {"message": "Wie konfiguriere ich den Pool?", "user": "ada"})
    assert chatted.status_code == 200
    queued = served.post("/autolearn/trigger", loop="memory")
    assert (queued.status_code, queued.json()["loop_id"]) == (202, "memory")

    def profiled() -> list[dict[str, Any]] | None:
        users: list[dict[str, Any]] = served.get("/autolearn/memory", user="ada").json()["users"]
        return users if users[0]["profile"] else None

    users = wait_until(profiled, "the memory cycle did not run")
    assert (users[0]["user"], users[0]["exchanges"]) == ("ada", 1)


def test_a_chat_without_a_user_is_remembered_for_nobody(served: Served) -> None:
    def users() -> list[str]:
        return [user["user"] for user in served.get("/autolearn/memory").json()["users"]]

    before = users()
    assert served.post("/chat", {"message": "Hello?"}).status_code == 200
    assert users() == before


def test_a_user_name_with_a_space_is_refused(served: Served) -> None:
    assert served.get("/autolearn/memory", user="a b").status_code == 422


def test_a_cycle_of_a_loop_that_is_not_an_autolearn_loop_is_refused(served: Served) -> None:
    assert served.post("/autolearn/trigger", loop="autopilot").status_code == 422


def test_a_chat_user_over_200_characters_is_refused(served: Served) -> None:
    assert served.post("/chat", {"message": "Hi", "user": "u" * 201}).status_code == 422

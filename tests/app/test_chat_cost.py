"""What one simple chat message costs the store, counted through its face: the operations handed
to ``Store`` (``submit``, ``read``, ``write``) and the JSON documents its encoder writes, for
``loopengine chat``'s path and the daemon's ``POST /chat`` and ``POST /v1/chat/completions``."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.api._app import create_app
from loopengine.api._context import ApiContext
from loopengine.api._prometheus import DaemonMetrics
from loopengine.app import Runtime, chat, chat_loop, open_runtime
from loopengine.daemon._log import DaemonLog
from loopengine.store import Store, _database
from loopengine.testing import FakeLLMServer, reply

pytestmark = pytest.mark.anyio

MAX_OPERATIONS = 6
MAX_ENCODINGS = 10


@dataclass
class Cost:
    """What the store was handed while ``counting``: each operation's name, each document's size."""

    counting: bool = False
    operations: list[str] = field(default_factory=list)
    encodings: list[int] = field(default_factory=list)

    def shown(self, what: str) -> str:
        return (
            f"{what}: {len(self.operations)} store operations ({', '.join(self.operations)}), "
            f"{len(self.encodings)} JSON encodings ({sum(self.encodings)} bytes)"
        )


class _CountingEncoder:
    def __init__(self, encode: Callable[..., str], cost: Cost) -> None:
        self.encode, self.cost = encode, cost

    def __call__(self, value: Any, default: Callable[[Any], Any]) -> str:
        text = self.encode(value, default)
        if self.cost.counting:
            self.cost.encodings.append(len(text))
        return text


@pytest.fixture
def cost(monkeypatch: pytest.MonkeyPatch) -> Cost:
    counted = Cost()
    for name in ("submit", "read"):  # write goes through submit
        original = getattr(Store, name)

        def counting(
            self: Store, operation: Any, *args: Any, _original: Any = original, **kwargs: Any
        ) -> Any:
            if counted.counting:
                counted.operations.append(operation.__name__)
            return _original(self, operation, *args, **kwargs)

        monkeypatch.setattr(Store, name, counting)
    monkeypatch.setattr(_database, "compact", _CountingEncoder(_database.compact, counted))
    return counted


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        (tmp_path / "loopengine.yaml").write_text(
            f"cluster:\n  nodes:\n    OL1: {{base_url: '{server.base_url}', model: ol1}}\n"
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
        monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
        server.script("ol1", [reply("Hello.")] * 2)
        yield server


async def _counted(
    cost: Cost, send: Callable[[], Awaitable[str]], what: str, *, first: bool = False
) -> str:
    """The reply of ``send``, the first message of the process or else the second, its cost
    printed."""
    if not first:
        await send()
    cost.counting = True
    try:
        answered = await send()
    finally:
        cost.counting = False
    print(cost.shown(what))
    return answered


def _within_goals(cost: Cost) -> None:
    assert len(cost.operations) <= MAX_OPERATIONS, cost.shown("a simple chat message")
    assert len(cost.encodings) <= MAX_ENCODINGS, cost.shown("a simple chat message")


async def test_a_simple_message_through_chat(node: FakeLLMServer, cost: Cost) -> None:
    async with open_runtime(None) as runtime:
        loop = chat_loop(runtime)

        async def send() -> str:
            return (await chat(runtime, loop, "hi", "s1", mode="simple")).reply

        assert await _counted(cost, send, "loopengine chat 'hi'", first=True) == "Hello."
    _within_goals(cost)


def _api(runtime: Runtime) -> ApiContext:
    def nothing(*_: Any) -> Any:
        return None

    return ApiContext(
        runtime.store,
        "test",
        30.0,
        None,
        lambda _: [],
        nothing,
        runtime,
        DaemonLog(io.StringIO()),
        hook=nothing,
        metrics=DaemonMetrics(),
    )


@asynccontextmanager
async def _daemon_api() -> AsyncIterator[httpx.AsyncClient]:
    async with open_runtime(None) as runtime:
        transport = httpx.ASGITransport(app=create_app(_api(runtime)))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client


async def test_a_simple_message_through_post_chat(node: FakeLLMServer, cost: Cost) -> None:
    async with _daemon_api() as client:

        async def send() -> str:
            body = {"message": "hi", "session_id": "s1", "mode": "simple"}
            answered = await client.post("/chat", json=body)
            return str(answered.json()["reply"])

        assert await _counted(cost, send, "POST /chat") == "Hello."
    _within_goals(cost)


async def test_a_simple_message_through_chat_completions(node: FakeLLMServer, cost: Cost) -> None:
    async with _daemon_api() as client:

        async def send() -> str:
            body = {"model": "loopengine-simple", "messages": [{"role": "user", "content": "hi"}]}
            answered = await client.post(
                "/v1/chat/completions", json=body, headers={"X-Session-ID": "s1"}
            )
            return str(answered.json()["choices"][0]["message"]["content"])

        assert await _counted(cost, send, "POST /v1/chat/completions") == "Hello."
    _within_goals(cost)

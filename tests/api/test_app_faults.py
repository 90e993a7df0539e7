"""What a request answers when serving it fails: 503 with Retry-After when the store is out
(also from inside a task group), 500 naming the request otherwise; never an exception out to the
server."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from loopengine.api._app import _Faults, _outage_in
from loopengine.daemon import DaemonLog
from loopengine.errors import StoreUnavailable


@dataclass
class _Store:
    outage: StoreUnavailable | None = None


@dataclass
class _Context:
    store: _Store
    log: DaemonLog


def _failing(error: BaseException) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise error

    return app


def _answer(
    error: BaseException, path: str = "/executions", outage: StoreUnavailable | None = None
) -> httpx.Response:
    context = _Context(_Store(outage), DaemonLog(io.StringIO()))
    middleware = _Faults(_failing(error), context, guarded=lambda path: path.startswith("/console"))

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=middleware)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path)

    return anyio.run(main)


def test_during_a_known_outage_the_api_answers_503_without_serving() -> None:
    down = StoreUnavailable("the database is unavailable: disk full", retry_after=5)
    answer = _answer(RuntimeError("served"), outage=down)
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "unavailable")


def test_during_a_known_outage_the_console_answers_its_own_pages() -> None:
    """Its pages check the session before anything, and say the outage in HTML."""
    down = StoreUnavailable("the database is unavailable: disk full", retry_after=5)
    answer = _answer(StoreUnavailable("served", retry_after=5), "/console/executions", down)
    assert answer.status_code == 503
    assert "served" in answer.text


def test_an_outage_from_inside_a_task_group_is_a_503() -> None:
    down = StoreUnavailable("the database is unavailable: disk full", retry_after=5)
    answer = _answer(ExceptionGroup("chat", [down, StoreUnavailable("again")]))
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "5"
    assert answer.json()["error"]["code"] == "unavailable"


@pytest.mark.parametrize(
    "error",
    [RuntimeError("a bug"), ExceptionGroup("chat", [StoreUnavailable("x"), KeyError("k")])],
    ids=["a bug", "a bug beside an outage"],
)
def test_anything_else_is_a_500_naming_the_request(error: BaseException) -> None:
    answer = _answer(error)
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "internal"


def test_an_outage_is_found_however_deep_the_groups_nest() -> None:
    down = StoreUnavailable("down")
    assert _outage_in(ExceptionGroup("a", [ExceptionGroup("b", [down])])) is down
    assert _outage_in(ValueError("no")) is None

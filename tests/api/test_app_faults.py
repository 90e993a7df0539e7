"""What a request answers when serving it fails: 503 with Retry-After when the store is out
(also from inside a task group), 500 naming the request otherwise; never an exception out to the
server."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from loopengine.api._app import _Faults, _outage_in, create_app
from loopengine.api._context import ApiContext
from loopengine.api._prometheus import DaemonMetrics
from loopengine.app import open_runtime
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


def _served_answer(error: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What the daemon's app answers ``GET /status`` when the store raises ``error`` on it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPENGINE_DATABASE", f"sqlite:///{tmp_path / 'store.db'}")

    async def failing(*_: Any, **__: Any) -> Any:
        raise error

    async def main() -> httpx.Response:
        async with open_runtime(None) as runtime:
            context = ApiContext(
                runtime.store,
                "test",
                30.0,
                None,
                lambda _: [],
                lambda _: None,
                runtime,
                DaemonLog(io.StringIO()),
                hook=lambda _: None,
                metrics=DaemonMetrics(),
            )
            monkeypatch.setattr(runtime.store, "read", failing)
            transport = httpx.ASGITransport(app=create_app(context))
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                return await client.get("/status")

    return anyio.run(main)


def test_an_outage_inside_an_endpoint_is_a_503(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = _served_answer(StoreUnavailable("down", retry_after=5), tmp_path, monkeypatch)
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "unavailable")
    assert answer.headers["retry-after"] == "5"


def test_a_bug_inside_an_endpoint_is_a_500_naming_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = _served_answer(RuntimeError("a bug"), tmp_path, monkeypatch)
    assert (answer.status_code, answer.json()["error"]["code"]) == (500, "internal")
    assert answer.headers["x-request-id"] in answer.json()["error"]["message"]

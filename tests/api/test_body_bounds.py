"""A request is bounded: its body in size and in time, without being buffered (a body past the limit
is a 413 as soon as it passes it, a body trickling in past the deadline a 408), and the requests
served at once (one more is a 503)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fastapi import FastAPI, Request
from starlette.types import Message

from loopengine.api._app import BodyBounds, InFlight

pytestmark = pytest.mark.anyio
LIMIT = 100


def _app(
    deadline_s: float, path_limit: int | None = None, work_s: float = 0.0
) -> tuple[BodyBounds, list[int]]:
    """An endpoint that reads its body then works ``work_s``, behind the bounds (``path_limit``
    for its path); and the sizes it read whole."""
    inner = FastAPI()
    read: list[int] = []

    @inner.post("/")
    async def take(request: Request) -> dict[str, int]:
        read.append(len(await request.body()))
        await anyio.sleep(work_s)
        return {"read": read[-1]}

    bounds = BodyBounds(inner, limit=LIMIT, deadline_s=deadline_s, limit_of=lambda _: path_limit)
    return bounds, read


async def _call(app: BodyBounds, parts: list[bytes], pause_s: float = 0.0, **head: Any) -> int:
    """The status of a POST whose body arrives in ``parts`` (taken as read), ``pause_s``
    apart."""
    headers = [(b"content-length", str(head["length"]).encode())] if "length" in head else []
    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers, "query_string": b""}
    statuses: list[int] = []

    async def receive() -> Message:
        if not parts:
            await anyio.sleep_forever()
        await anyio.sleep(pause_s)
        body = parts.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0]


async def test_a_body_within_bounds_is_read_whole() -> None:
    app, read = _app(deadline_s=5)
    assert await _call(app, [b"a" * 60, b"b" * 40]) == 200
    assert read == [100]


async def test_a_declared_length_past_the_limit_is_refused_unread() -> None:
    app, read = _app(deadline_s=5)
    assert await _call(app, [], length=LIMIT + 1) == 413
    assert read == []


async def test_chunks_past_the_limit_are_refused_as_they_pass_it() -> None:
    app, read = _app(deadline_s=5)
    sent = [b"a" * 60, b"b" * 60, b"never read"]
    assert await _call(app, sent) == 413
    assert sent == [b"never read"]
    assert read == []


async def test_a_path_with_a_smaller_limit_is_held_to_it() -> None:
    app, read = _app(deadline_s=5, path_limit=10)
    assert await _call(app, [b"a" * 6, b"b" * 6]) == 413
    assert await _call(app, [], length=11) == 413
    assert read == []


async def test_a_body_trickling_past_the_deadline_is_a_408() -> None:
    app, read = _app(deadline_s=0.2)
    with anyio.fail_after(5):
        assert await _call(app, [b"a"] * 50, pause_s=0.05) == 408
    assert read == []


async def test_an_endpoint_working_past_the_deadline_once_its_body_is_whole_answers() -> None:
    app, read = _app(deadline_s=0.1, work_s=0.3)
    assert await _call(app, [b"a" * 10]) == 200
    assert read == [10]


async def test_a_request_cancelled_while_its_body_is_awaited_stays_cancelled() -> None:
    """Only the deadline makes a 408: a cancellation from outside (the server stopping) is let
    through, and the request answers nothing."""
    app, read = _app(deadline_s=5)
    with anyio.move_on_after(0.1) as waited:
        await _call(app, [b"a", b"b"], pause_s=10)
    assert waited.cancelled_caught
    assert read == []


async def _served_at_once(paths: list[str], limit: int, open_limit: int) -> list[int]:
    """The statuses of requests to ``paths`` sent together, each held until all have begun."""
    release = anyio.Event()
    statuses: list[int] = []

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app = InFlight(slow, limit=limit, open_limit=open_limit)

    async def call(path: str) -> None:
        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        scope = {"type": "http", "method": "GET", "path": path, "headers": []}
        await app(scope, anyio.sleep_forever, send)

    async with anyio.create_task_group() as group:
        for path in paths:
            group.start_soon(call, path)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert (app.serving, app.serving_open) == (0, 0)
    return sorted(statuses)


async def test_a_request_past_the_limit_in_flight_is_a_503() -> None:
    assert await _served_at_once(["/status"] * 3, limit=2, open_limit=2) == [200, 200, 503]


async def test_webhooks_cannot_take_every_slot() -> None:
    statuses = await _served_at_once(["/hooks/x"] * 2 + ["/status"], limit=3, open_limit=1)
    assert statuses == [200, 200, 503]


async def test_health_answers_when_every_slot_is_taken() -> None:
    statuses = await _served_at_once(["/status", "/health", "/status"], limit=1, open_limit=1)
    assert statuses == [200, 200, 503]

"""The bulk endpoints' plain requests are served without FastAPI's routing; every other request
reaches the app with its body intact, and both answer a request alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from loopengine.api._context import ApiContext
from loopengine.api._lanes import FastLanes
from tests.daemon.conftest import BY_HAND, ON_EVENT, Workspace, serving

JSON = b"application/json"
HANDED_ON = [
    ("/events", b'{"name": "seo.page.updated", "data": {"page": NaN}}', JSON, {}),
    ("/events", b'{"name": "seo.page.updated", "data": {"page": 1e999}}', JSON, {}),
    (
        "/events",
        b'{"name": "seo.page.updated", "data": {"page": 1' + b"0" * 310 + b".0}}",
        JSON,
        {},
    ),
    ("/events", b'{"name": "seo.page.updated", "data": {"page": ', JSON, {}),
    ("/events", b'{"data": {}}', JSON, {}),
    ("/events", b'{"name": "seo.page.updated"}', b"text/plain", {}),
    ("/events", b"", JSON, {}),
    ("/loops/by_hand/trigger", b'{"inputs": []}', JSON, {}),
    ("/loops/by_hand/trigger", b"{}", JSON, {b"idempotency-key": b"k" * 201}),
    ("/loops/by_hand/trigger", b"{}", b"application/x-www-form-urlencoded", {}),
]


def _handed_on(path: str, body: bytes, content_type: bytes, headers: dict[bytes, bytes]) -> bytes:
    """The body the app behind ``FastLanes`` received for a request it was handed."""
    seen: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        seen.append(message["body"])
        while message.get("more_body"):
            message = await receive()
            seen[0] += message["body"]

    middle = len(body) // 2
    chunks: list[Message] = [
        {"type": "http.request", "body": body[:middle], "more_body": True},
        {"type": "http.request", "body": body[middle:], "more_body": False},
    ]

    async def receive() -> Message:
        return chunks.pop(0)

    async def send(message: Message) -> None:
        raise AssertionError(f"the lane answered: {message}")

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-type", content_type), *headers.items()],
    }
    lanes = FastLanes(app, cast(ApiContext, None))
    asyncio.run(lanes(scope, receive, send))
    [received] = seen
    return received


@pytest.mark.parametrize(("path", "body", "content_type", "headers"), HANDED_ON)
def test_a_request_that_is_not_plain_reaches_the_app_with_its_body(
    path: str, body: bytes, content_type: bytes, headers: dict[bytes, bytes]
) -> None:
    assert _handed_on(path, body, content_type, headers) == body


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    loops = {"by_hand.yaml": BY_HAND, "on_event.yaml": ON_EVENT}
    with serving(tmp_path_factory.mktemp("lanes"), loops, None) as started:
        yield started


def _both(url: str, path: str, body: bytes, **headers: str) -> list[tuple[int, Any]]:
    """The answers to ``body`` sent as ``application/json`` (served by the lane) and as
    ``application/merge-patch+json`` (which only the app reads)."""
    answers = []
    for content_type in ("application/json", "application/merge-patch+json"):
        sent = {"Content-Type": content_type, **headers}
        response = httpx.post(url + path, content=body, headers=sent, timeout=10)
        answers.append((response.status_code, response.json()))
    return answers


def test_an_event_is_answered_alike_by_the_lane_and_the_app(served: tuple[Workspace, str]) -> None:
    body = b'{"name": "seo.page.updated", "data": {"page": 3}}'
    (lane, by_lane), (app, by_app) = _both(served[1], "/events", body)
    assert (lane, app) == (202, 202)
    assert by_app["id"] == by_lane["id"] + 1
    assert (
        {**by_lane, "id": 0}
        == {**by_app, "id": 0}
        == {
            "id": 0,
            "name": "seo.page.updated",
            "matched": ["on_event"],
        }
    )


def test_a_repeated_key_is_answered_alike_by_the_lane_and_the_app(
    served: tuple[Workspace, str],
) -> None:
    key = {"Idempotency-Key": "lanes-and-app"}
    first, again = _both(served[1], "/loops/by_hand/trigger", b"{}", **key)
    assert first[0] == 202
    assert again == (200, {**first[1], "status": "duplicate"})


def test_a_trigger_of_no_loop_is_refused_alike_by_the_lane_and_the_app(
    served: tuple[Workspace, str],
) -> None:
    lane, app = _both(served[1], "/loops/nope/trigger", b"{}")
    assert lane == app
    assert lane[0] == 404


def test_a_repeated_header_is_read_by_its_first_value_alike_by_the_lane_and_the_app(
    served: tuple[Workspace, str],
) -> None:
    answers = []
    for content_type in ("application/json", "application/merge-patch+json"):
        sent = [
            ("Content-Type", content_type),
            ("Idempotency-Key", "k" * 300),
            ("Idempotency-Key", f"short-{content_type}"),
        ]
        response = httpx.post(served[1] + "/loops/by_hand/trigger", content=b"{}", headers=sent)
        answers.append(response.status_code)
    assert answers == [422, 422]

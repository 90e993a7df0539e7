"""Chat threads over HTTP (seed 002) on a real daemon: ETags and 304, batches under If-Match
(412 stale, 428 missing), replays answered with ``applied: false``, 422 and 409 as the thread
rules say, bounded bodies, and 20 writers racing on one session."""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import httpx
import pytest

from loopengine.api._threads import (
    MAX_ARGUMENT_DEPTH,
    MAX_BATCH,
    MAX_CALLS,
    MAX_CONTENT,
)
from tests.daemon.conftest import Workspace

WRITERS, BATCHES = 20, 100
_BAD_ARGUMENTS = {"name": "f", "arguments": "{bad"}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API of a daemon without a token, on its own SQLite store."""
    root = tmp_path_factory.mktemp("threads")
    (root / "loops").mkdir()
    (root / "loopengine.yaml").write_text("daemon: {port: 0}\n")
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}", "NO_COLOR": "1"}
    env.pop("LOOPENGINE_CONFIG", None)
    env.pop("LOOPENGINE_API_TOKEN", None)
    daemon = Workspace(root, env).start()
    ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
    try:
        yield str(ready["api"])
    finally:
        assert daemon.stop() == 0


def _round(call_id: str, result: Any = "ok") -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"result": result})},
    ]


def _post(
    url: str, session: str, body: Any, key: str | None = "op-1", if_match: str | None = '"0"'
) -> httpx.Response:
    headers = {"Idempotency-Key": key, "If-Match": if_match}
    sent = {name: value for name, value in headers.items() if value is not None}
    return httpx.post(f"{url}/sessions/{session}/messages/batch", json=body, headers=sent)


def _get(url: str, session: str, **headers: str) -> httpx.Response:
    return httpx.get(f"{url}/sessions/{session}/messages", headers=headers)


def _error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return body["error"]


def test_a_session_without_messages_is_an_empty_thread_at_version_0(url: str) -> None:
    response = _get(url, "never-written")
    assert response.status_code == 200
    assert response.headers["etag"] == '"0"'
    assert response.json() == {"session": {"id": "never-written", "version": 0}, "messages": []}


def test_a_session_a_chat_may_name_can_be_read(url: str) -> None:
    response = _get(url, "alice@example.com")
    assert response.status_code == 200
    assert response.json()["session"]["id"] == "alice@example.com"


def test_a_batch_is_applied_and_answers_the_new_etag(url: str) -> None:
    body = {"messages": _round("call_a"), "operation_id": "op-1", "relance_index": 2}
    response = _post(url, "first", body)
    assert response.status_code == 200
    assert response.headers["etag"] == '"1"'
    answer = response.json()
    assert (answer["success"], answer["applied"]) == (True, True)
    assert answer["data"] == {
        "session": {"id": "first", "version": 1},
        "messages": _get(url, "first").json()["messages"],
        "operation_id": "op-1",
        "relance_index": 2,
    }
    assert [m["role"] for m in answer["data"]["messages"]] == ["assistant", "tool"]


def test_a_replay_is_200_with_applied_false_whatever_its_if_match(url: str) -> None:
    first = _post(url, "replayed", {"messages": _round("call_a")})
    again = _post(url, "replayed", {"messages": _round("call_a")}, if_match='"0"')
    assert again.status_code == 200
    assert again.json()["applied"] is False
    assert again.json()["data"]["messages"] == first.json()["data"]["messages"]
    assert again.headers["etag"] == '"1"'
    unconditional = _post(url, "replayed", {"messages": _round("call_a")}, if_match=None)
    assert (unconditional.status_code, unconditional.json()["applied"]) == (200, False)
    assert len(_get(url, "replayed").json()["messages"]) == 2


def test_the_thread_is_read_with_its_etag_and_304_when_unchanged(url: str) -> None:
    _post(url, "cached", {"messages": [{"role": "user", "content": "hi"}]})
    fresh = _get(url, "cached")
    assert fresh.headers["etag"] == '"1"'
    assert fresh.json()["messages"] == [{"role": "user", "content": "hi"}]
    for tag in ('"1"', 'W/"1"', '"0", "1"', "*"):
        unchanged = _get(url, "cached", **{"If-None-Match": tag})
        assert (unchanged.status_code, unchanged.content) == (304, b"")
        assert unchanged.headers["etag"] == '"1"'
    assert _get(url, "cached", **{"If-None-Match": '"0"'}).status_code == 200


def test_head_answers_the_etag_alone(url: str) -> None:
    _post(url, "headed", {"messages": [{"role": "user", "content": "hi"}]})
    response = httpx.head(f"{url}/sessions/headed/messages")
    assert (response.status_code, response.headers["etag"], response.content) == (200, '"1"', b"")


def test_a_stale_if_match_is_412(url: str) -> None:
    _post(url, "stale", {"messages": _round("call_a")})
    response = _post(url, "stale", {"messages": _round("call_b")}, key="op-2", if_match='"0"')
    assert response.status_code == 412
    assert _error(response) == {
        "code": "precondition_failed",
        "message": "If-Match 0 is stale: the thread is at 1",
    }


def test_a_batch_without_if_match_is_428(url: str) -> None:
    response = _post(url, "unconditional", {"messages": _round("call_a")}, if_match=None)
    assert response.status_code == 428
    assert _error(response) == {
        "code": "precondition_required",
        "message": "If-Match is required: send the thread's ETag",
    }
    assert _get(url, "unconditional").json()["messages"] == []


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        (
            [_round("call_a")[0], {"role": "tool", "tool_call_id": "call_a", "content": "no"}],
            "JSON",
        ),
        ([{"role": "tool", "tool_call_id": "nope", "content": "{}"}], "answers no call"),
        ([{"role": "robot", "content": "hi"}], "role 'robot'"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": _BAD_ARGUMENTS}]}],
            "arguments must be a JSON object",
        ),
        (
            [_round("call_a")[0], {**_round("call_a")[1], "name": "read_file"}],
            "name 'read_file' is not the tool call 'call_a' asked for ('list_dir')",
        ),
        (
            [_round("call_a")[0], {**_round("call_a")[1], "timestamp": "yesterday"}],
            "timestamp: Value error, not an ISO 8601 time",
        ),
    ],
    ids=["content", "unknown-call", "role", "arguments", "tool-name", "timestamp"],
)
def test_an_invalid_batch_is_422_and_stores_nothing(
    url: str, messages: list[dict[str, Any]], said: str
) -> None:
    response = _post(url, "invalid", {"messages": messages})
    assert response.status_code == 422
    assert said in _error(response)["message"]
    assert _get(url, "invalid").headers["etag"] == '"0"'


def test_a_tool_message_keeps_what_it_says_of_the_run(url: str) -> None:
    said = {
        "timestamp": "2026-11-23T18:50:02Z",
        "relance_index": 1,
        "success": True,
        "error": None,
        "duration_ms": 3.25,
    }
    result = {**_round("call_a")[1], **said}
    response = _post(url, "kept", {"messages": [_round("call_a")[0], result]})
    assert response.status_code == 200
    kept = {key: value for key, value in said.items() if value is not None}
    assert response.json()["data"]["messages"][1] == {**_round("call_a")[1], **kept}
    assert _get(url, "kept").json()["messages"][1] == {**_round("call_a")[1], **kept}


def test_the_relance_index_header_is_read_as_the_body_field_is(url: str) -> None:
    headers = {"Idempotency-Key": "op-1", "If-Match": '"0"', "X-Relance-Index": "4"}
    body = {"messages": _round("call_a")}
    response = httpx.post(f"{url}/sessions/relanced/messages/batch", json=body, headers=headers)
    assert response.json()["data"]["relance_index"] == 4
    assert _get(url, "relanced").json()["messages"][1]["relance_index"] == 4


def test_a_relance_index_header_and_body_field_that_differ_are_422(url: str) -> None:
    headers = {"Idempotency-Key": "op-1", "If-Match": '"0"', "X-Relance-Index": "4"}
    body = {"messages": _round("call_a"), "relance_index": 5}
    response = httpx.post(f"{url}/sessions/relances/messages/batch", json=body, headers=headers)
    assert response.status_code == 422
    assert "X-Relance-Index and relance_index differ" in _error(response)["message"]
    assert _get(url, "relances").json()["messages"] == []


def test_the_same_key_with_another_body_is_422(url: str) -> None:
    _post(url, "rekeyed", {"messages": _round("call_a")})
    response = _post(url, "rekeyed", {"messages": _round("call_b")}, if_match='"1"')
    assert response.status_code == 422
    assert "already applied with another body" in _error(response)["message"]


def test_a_message_of_another_session_is_409(url: str) -> None:
    leaked = {**_round("call_x")[1], "session_id": "alice"}
    response = _post(url, "bob", {"messages": [_round("call_x")[0], leaked]})
    assert response.status_code == 409
    assert _error(response)["code"] == "conflict"
    assert _get(url, "bob").json()["messages"] == []


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"x": value}
    return value


def _calls(count: int) -> list[dict[str, Any]]:
    return [{"id": f"c{n}", "function": {"name": "f"}} for n in range(count)]


def _call_with(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "c", "function": {"name": "f", "arguments": arguments}}
    return [{"role": "assistant", "tool_calls": [call]}]


@pytest.mark.parametrize(
    ("session", "body", "said"),
    [
        ("bad id!", {"messages": [{"role": "user"}]}, "session_id: String should match"),
        ("s" * 201, {"messages": [{"role": "user"}]}, "session_id: String should have at most"),
        ("s", {"messages": []}, "messages: List should have at least 1 item"),
        ("s", {"messages": [{"role": "user"}] * (MAX_BATCH + 1)}, "messages: List should"),
        (
            "s",
            {"messages": [{"role": "user", "content": "x" * (MAX_CONTENT + 1)}]},
            "content: String should have at most",
        ),
        ("s", {"messages": _call_with(_nested(MAX_ARGUMENT_DEPTH + 1))}, "nested more than 32"),
        (
            "s",
            {"messages": _call_with("{" * (MAX_CONTENT + 1))},
            "arguments.constrained-str: String should have at most",
        ),
        (
            "s",
            {"messages": [{"role": "user", "name": "n" * 201}]},
            "name: String should have at most",
        ),
        (
            "s",
            {"messages": [{"role": "assistant", "tool_calls": _calls(MAX_CALLS + 1)}]},
            "tool_calls: List should",
        ),
    ],
)
def test_a_body_past_its_bounds_is_422_in_one_line(
    url: str, session: str, body: Any, said: str
) -> None:
    response = _post(url, session, body)
    assert response.status_code == 422
    message = _error(response)["message"]
    assert said in message
    assert "\n" not in message


def test_arguments_as_an_object_within_bounds_are_stored(url: str) -> None:
    response = _post(url, "objects", {"messages": _call_with(_nested(MAX_ARGUMENT_DEPTH))})
    assert response.status_code == 200
    stored = response.json()["data"]["messages"][0]["tool_calls"][0]["function"]["arguments"]
    assert stored == _nested(MAX_ARGUMENT_DEPTH)


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"If-Match": '"0"'}, "name the batch"),
        ({"If-Match": '"0"', "Idempotency-Key": "a", "X-Operation-ID": "b"}, "differ"),
        ({"If-Match": "0", "Idempotency-Key": "a"}, "send one ETag"),
        ({"If-Match": 'W/"0"', "Idempotency-Key": "a"}, "send one ETag"),
        ({"If-Match": '"0", "1"', "Idempotency-Key": "a"}, "send one ETag"),
        ({"If-Match": b'"\xb9"', "Idempotency-Key": "a"}, "send one ETag"),
        ({"If-Match": '"0"', "Idempotency-Key": "k" * 201}, "idempotency-key"),
    ],
)
def test_bad_batch_headers_are_422(url: str, headers: dict[str, Any], said: str) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{url}/sessions/headers/messages/batch", json=body, headers=headers)
    assert response.status_code == 422
    assert said in _error(response)["message"]


def test_the_operation_id_may_come_from_x_operation_id_or_the_body(url: str) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "operation_id": "op-9"}
    headers = {"If-Match": '"0"', "X-Operation-ID": "op-9"}
    first = httpx.post(f"{url}/sessions/named/messages/batch", json=body, headers=headers)
    assert first.json()["data"]["operation_id"] == "op-9"
    again = _post(url, "named", body, key="op-9")
    assert (again.status_code, again.json()["applied"]) == (200, False)


def _writer(url: str, writer: int) -> Counter[str]:
    """``BATCHES`` rounds, each retried on 412 (after a jittered backoff) with the version read
    again, then replayed with its stale If-Match; every tenth first sent without If-Match. What
    it was answered, counted."""
    seen: Counter[str] = Counter()
    with httpx.Client(base_url=f"{url}/sessions/raced", timeout=60) as client:
        for batch in range(BATCHES):
            key = f"w{writer}-b{batch}"
            body = {"messages": _round(f"call-{key}", key)}
            if batch % 10 == 0:
                refused = client.post(
                    "/messages/batch", json=body, headers={"Idempotency-Key": key}
                )
                seen[str(refused.status_code)] += 1
            for attempt in itertools.count():
                version = int(client.head("/messages").headers["etag"][1:-1])
                headers = {"Idempotency-Key": key, "If-Match": f'"{version}"'}
                response = client.post("/messages/batch", json=body, headers=headers)
                seen[str(response.status_code)] += 1
                if response.status_code != 412:
                    break
                time.sleep(random.uniform(0, min(0.2, 0.02 * 2**attempt)))
            assert response.status_code == 200, response.text
            assert response.json()["data"]["session"]["version"] == version + 1
            replay = client.post("/messages/batch", json=body, headers=headers)
            seen["replayed" if replay.json()["applied"] is False else "reapplied"] += 1
    return seen


def test_20_writers_racing_on_one_session_lose_no_batch(url: str) -> None:
    with ThreadPoolExecutor(WRITERS) as pool:
        seen = sum(pool.map(partial(_writer, url), range(WRITERS)), Counter[str]())
    thread = _get(url, "raced")
    assert thread.headers["etag"] == f'"{WRITERS * BATCHES}"'
    calls = [m["tool_call_id"] for m in thread.json()["messages"] if m["role"] == "tool"]
    for writer in range(WRITERS):
        mine = [c for c in calls if c.startswith(f"call-w{writer}-")]
        assert mine == [f"call-w{writer}-b{batch}" for batch in range(BATCHES)]
    assert len(calls) == WRITERS * BATCHES
    assert set(seen) <= {"200", "412", "428", "replayed"}
    assert (seen["200"], seen["replayed"]) == (WRITERS * BATCHES, WRITERS * BATCHES)
    assert seen["428"] == WRITERS * BATCHES // 10
    assert seen["412"] > 0

"""Live pages: ``/console/live`` streams each commit of an execution as it becomes durable, of
this daemon's executions and (within a second) of another process's, bounded per session."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.console._live import RETRY_MS, STREAMS_PER_SESSION, since_of
from loopengine.store import ExecutionRow, executions, write_once
from tests.console.conftest import Console, Served
from tests.console.test_executions import _run
from tests.daemon.conftest import serving
from tests.waiting import DEADLINE_S, wait_until

_Event = dict[str, Any]


@contextmanager
def _stream(console: Console, query: str = "", **headers: str) -> Iterator[Iterator[_Event]]:
    """The events of a live stream opened now, as they come."""
    with console.http.stream("GET", f"/console/live{query}", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")

        def events() -> Iterator[_Event]:
            event: _Event = {}
            ends = time.monotonic() + DEADLINE_S
            for line in response.iter_lines():
                assert time.monotonic() < ends, "no such event within the deadline"
                if line.startswith("id: "):
                    event["id"] = int(line[4:])
                elif line.startswith("data: "):
                    event.update(json.loads(line[6:]))
                elif not line and "what" in event:
                    yield event
                    event = {}

        yield events()


def _told_until_finished(events: Iterator[_Event], execution_id: str) -> list[str]:
    """What the stream told of ``execution_id``, up to its end."""
    told = []
    for event in events:
        if event["execution"] == execution_id:
            told.append(event["what"])
            if event["what"] == "finished":
                return told
    raise AssertionError(f"the stream ended before {execution_id} finished: {told}")


def test_a_stream_tells_each_commit_of_a_run(served: Served, console: Console) -> None:
    with _stream(console) as events:
        run = _run(served, "counted", "n=2")
        told = _told_until_finished(events, run["execution_id"])
    assert told[0] == "started"
    assert {"decide", "act"} <= set(told), told
    assert told[-1] == "finished"


def test_a_stream_of_one_execution_tells_of_no_other(served: Served, console: Console) -> None:
    waits = _run(served, "gated", "n=8")["execution_id"]
    with _stream(console, f"?execution={waits}") as events:
        _run(served, "counted", "n=3")
        console.post(f"/console/executions/{waits}/answer", {"decision": "approve"})
        told = _told_until_finished(events, waits)
        assert told[-1] == "finished"


def test_a_reader_that_missed_changes_is_told_to_read_again(
    served: Served, console: Console
) -> None:
    _run(served, "counted", "n=5")
    with _stream(console, "?since=0") as events:
        event = next(events)
    assert event["what"] == "refresh"
    assert event["execution"] is None
    assert event["id"] > 0


def test_a_reader_back_after_a_break_is_told_to_read_again(
    served: Served, console: Console
) -> None:
    _run(served, "counted", "n=6")
    with _stream(console, "?since=999999999", **{"Last-Event-ID": "1"}) as events:
        event = next(events)
    assert (event["what"], event["execution"]) == ("refresh", None)


def test_a_commit_of_another_process_is_told(served: Served, console: Console) -> None:
    row = ExecutionRow(
        id="elsewhere-1",
        loop_id="elsewhere",
        loop_version="v",
        loop_file="elsewhere.yaml",
        job_id="elsewhere-1",
        durability="phase",
        dry_run=False,
        started_at=4_000_000_000.0,
        status="running",
        trigger_type="manual",
    )
    with _stream(console) as events:
        write_once(served.workspace.env["LOOPENGINE_DATABASE"], executions.insert_execution, row)
        told = next(event for event in events if event["execution"] == row.id)
    assert told["what"] == "refresh"


def test_a_stream_without_a_session_is_refused(anonymous: Console) -> None:
    response = anonymous.http.get("/console/live")
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?")


def test_a_session_holds_a_few_streams_at_once(served: Served, console: Console) -> None:
    other = served.client()
    try:
        assert other.login().status_code == 303
        with ExitStack() as held:
            for _ in range(STREAMS_PER_SESSION):
                held.enter_context(_stream(console))
            refused = console.http.get("/console/live")
            with _stream(other):
                pass
        assert refused.status_code == 429
        assert "live pages per login" in refused.text

        def opens() -> bool:
            """The daemon frees a stream's place once it sees its reader gone: soon after."""
            with console.http.stream("GET", "/console/live") as response:
                return response.status_code == 200

        wait_until(opens, "no place was freed by the streams closed")
    finally:
        other.close()


@pytest.mark.parametrize(
    ("given", "expected"),
    [("12", 12), ("", None), (None, None), ("-1", None), ("1e3", None), ("9" * 21, None)],
)
def test_a_reader_s_last_event_is_a_number_of_ours(given: str | None, expected: int | None) -> None:
    assert since_of(given) == expected


def test_a_stream_is_never_stored_nor_sized_in_advance(console: Console) -> None:
    with console.http.stream("GET", "/console/live") as response:
        assert response.headers["cache-control"] == "no-store"
        assert "content-length" not in response.headers


def test_a_stream_ends_cleanly_when_the_daemon_stops(tmp_path: Path) -> None:
    with httpx.Client(timeout=30) as client:
        with serving(tmp_path, {}, None) as (_, url):
            response = client.send(client.build_request("GET", f"{url}/console/live"), stream=True)
            assert response.status_code == 200
        try:
            lines = [*response.iter_lines()]
        finally:
            response.close()
    assert lines[:2] == [f"retry: {RETRY_MS}", ""]

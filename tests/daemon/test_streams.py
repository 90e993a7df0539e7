"""A Redis Stream feeding the event log, against a real redis-server and real daemons: each entry
becomes one event (``source: redis``) that fires the loops matching it, acknowledged only once
committed; a daemon killed in between loses none, a bad entry is logged and acknowledged once,
and Redis going away stops nothing else."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from tests.daemon.conftest import ON_EVENT, TICK, Workspace
from tests.redis import RedisServer, redis_server
from tests.waiting import wait_until

STREAM = "shop:events"


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


def _configure(workspace: Workspace, redis: RedisServer, **source: Any) -> None:
    settings = {"type": "redis", "url": redis.url, "stream": STREAM, **source}
    config = {"daemon": {"port": 0}, "events": {"sources": [settings]}}
    (workspace.root / "loopengine.yaml").write_text(json.dumps(config))


def _joined(redis: RedisServer) -> None:
    """Once the daemon has made its consumer group on the stream."""
    client = redis.client()
    wait_until(
        lambda: client.exists(STREAM) and client.xinfo_groups(STREAM),
        "the daemon did not join the stream",
    )


def _from_redis(workspace: Workspace) -> list[dict[str, Any]]:
    found = workspace.json("events", "list")["events"]
    return [event for event in found if event["source"] == "redis"]


def _pending(redis: RedisServer) -> int:
    return int(redis.client().xpending(STREAM, "loopengine")["pending"])


def test_an_entry_becomes_one_event_that_fires_its_loops_and_is_acknowledged(
    redis: RedisServer, workspace: Workspace
) -> None:
    (workspace.root / "loops" / "on_event.yaml").write_text(ON_EVENT)
    _configure(workspace, redis)
    daemon = workspace.start()
    _joined(redis)
    redis.client().xadd(STREAM, {"name": "seo.page.updated", "data": '{"page": 3}'})
    daemon.wait_for(lambda line: line.get("kind") == "end" and line.get("loop") == "on_event")
    [event] = _from_redis(workspace)
    assert (event["name"], event["data"]) == ("seo.page.updated", {"page": 3})
    assert _pending(redis) == 0


def test_bad_entries_are_logged_once_and_acknowledged(
    redis: RedisServer, workspace: Workspace
) -> None:
    _configure(workspace, redis)
    daemon = workspace.start()
    _joined(redis)
    client = redis.client()
    client.xadd(STREAM, {"name": "seo.page.updated", "data": "{not json"})
    client.xadd(STREAM, {"name": "seo.page.updated", "data": json.dumps({"x": "y" * 70_000})})
    client.xadd(STREAM, {"data": "{}"})
    client.xadd(STREAM, {"name": "after.bad"})
    wait_until(lambda: _from_redis(workspace), "the good entry was not appended")
    refused = [line for line in daemon.lines() if "refused" in line.get("message", "")]
    said = [line["message"].split("refused: ", 1)[1] for line in refused]
    assert [s.split(":")[0] for s in said] == [
        "field 'data' is not JSON",
        "field 'data' is over 65536 bytes as JSON",
        "field 'name'",
    ]
    assert [e["name"] for e in _from_redis(workspace)] == ["after.bad"]
    assert _pending(redis) == 0


def _killed_between_read_and_ack(workspace: Workspace, redis: RedisServer) -> None:
    """A daemon reads an entry while the store cannot take its write, and is killed: the entry
    is read and not acknowledged; the store is free again afterwards."""
    first = workspace.start()
    _joined(redis)
    with closing(sqlite3.connect(workspace.database, isolation_level=None)) as lock:
        lock.execute("BEGIN IMMEDIATE")
        redis.client().xadd(STREAM, {"name": "order.paid", "data": '{"order": 7}'})
        first.wait_until(lambda: _pending(redis) == 1, "the entry was not read")
        first.kill()
        lock.execute("ROLLBACK")
    assert _from_redis(workspace) == []


def test_a_daemon_killed_between_read_and_ack_reads_the_entry_again_on_restart(
    redis: RedisServer, workspace: Workspace
) -> None:
    _configure(workspace, redis, consumer="shop-1")
    _killed_between_read_and_ack(workspace, redis)
    workspace.start()
    events = wait_until(lambda: _from_redis(workspace), "the entry was lost")
    assert [(e["name"], e["data"]) for e in events] == [("order.paid", {"order": 7})]
    wait_until(lambda: _pending(redis) == 0, "the entry was not acknowledged")


def test_another_daemon_claims_an_entry_left_pending_past_the_idle_time(
    redis: RedisServer, workspace: Workspace
) -> None:
    _configure(workspace, redis, consumer="shop-1")
    _killed_between_read_and_ack(workspace, redis)
    _configure(workspace, redis, consumer="shop-2", claim_idle_s=0.5)
    workspace.start()
    events = wait_until(lambda: _from_redis(workspace), "the entry was not claimed")
    assert [e["name"] for e in events] == ["order.paid"]
    wait_until(lambda: _pending(redis) == 0, "the entry was not acknowledged")
    consumers = redis.client().xinfo_consumers(STREAM, "loopengine")
    assert {c["name"]: c["pending"] for c in consumers} == {"shop-1": 0, "shop-2": 0}


def test_a_redis_outage_stops_no_other_loop_and_reading_resumes_when_it_returns(
    redis: RedisServer, workspace: Workspace
) -> None:
    (workspace.root / "loops" / "tick.yaml").write_text(TICK.format(catchup="skip"))
    _configure(workspace, redis)
    daemon = workspace.start()
    _joined(redis)
    redis.stop()
    daemon.wait_for(lambda line: line.get("kind") == "error" and line.get("stream") == STREAM)
    ended = len([line for line in daemon.lines() if line.get("kind") == "end"])
    daemon.wait_for(lambda line: line.get("kind") == "end", count=ended + 2)
    redis.start()
    daemon.wait_for(lambda line: line.get("kind") == "redis")
    redis.client().xadd(STREAM, {"name": "back.again"})
    wait_until(lambda: _from_redis(workspace), "reading did not resume")
    outages = [line for line in daemon.lines() if line.get("stream") == STREAM]
    assert [line["kind"] for line in outages] == ["error", "redis"]
    assert daemon.stop() == 0


def test_an_entry_committed_but_not_acknowledged_is_appended_once(
    redis: RedisServer, workspace: Workspace
) -> None:
    """The daemon may not acknowledge (its ACL denies XACK), so it is killed after the commit;
    restarted once it may, it reads the entry again and appends nothing."""
    admin = redis.client()
    admin.acl_setuser(
        "daemon", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-xack"]
    )
    url = redis.url.replace("redis://", "redis://daemon:pw@")
    settings = {"type": "redis", "url": url, "stream": STREAM, "consumer": "shop-1"}
    config = {"daemon": {"port": 0}, "events": {"sources": [settings]}}
    (workspace.root / "loopengine.yaml").write_text(json.dumps(config))
    first = workspace.start()
    _joined(redis)
    admin.xadd(STREAM, {"name": "order.paid"})
    wait_until(lambda: _from_redis(workspace), "the entry was not appended")
    first.kill()
    admin.acl_setuser("daemon", enabled=True, commands=["+xack"])
    workspace.start()
    wait_until(lambda: _pending(redis) == 0, "the entry was not acknowledged")
    assert [e["name"] for e in _from_redis(workspace)] == ["order.paid"]

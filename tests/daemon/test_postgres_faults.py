"""Daemons on PostgreSQL under faults: the database restarted under load, a daemon paused past
its lease, an event committed after later ones, the API while the database is down. Each daemon
stays up, and every acknowledged event and job runs exactly once."""

from __future__ import annotations

import signal
import time
from collections import Counter

import httpx
import sqlalchemy as sa

from loopengine.store import signals
from tests.daemon.conftest import BY_HAND, ON_EVENT, Daemon, Workspace
from tests.daemon.effects import SLOW, api_of, calls, effects, rows, write_plugin
from tests.job_rows import ALL_JOBS
from tests.postgres import PostgresServer
from tests.waiting import wait_until

QUEUED = "concurrency: {max: 4, on_overlap: queue, max_queue: 10000}\n"
"""Every firing runs (none skipped as an overlap): each can be counted."""


def _ended(daemon: Daemon) -> bool:
    return any(line.get("kind") == "end" for line in daemon.lines())


def _drained(url: str) -> bool:
    left = rows(url, "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")
    return left == [(0,)]


def test_a_restarted_database_stops_no_daemon_and_loses_nothing_acknowledged(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    loops = on_postgres.root / "loops"
    (loops / "on_event.yaml").write_text(ON_EVENT + QUEUED)
    (loops / "by_hand.yaml").write_text(BY_HAND + QUEUED)
    daemons = [on_postgres.start("first.log"), on_postgres.start("second.log")]
    api = api_of(daemons[0])
    events: list[int] = []
    jobs: list[str] = []
    refused = 0

    def send(client: httpx.Client) -> None:
        nonlocal refused
        sent = client.post("/events", json={"name": "seo.page.up", "data": {"page": 1}})
        fired = client.post("/loops/by_hand/trigger", json={})
        for answer in (sent, fired):
            if answer.status_code == 503:
                assert int(answer.headers["retry-after"]) >= 1
                refused += 1
            else:
                assert answer.status_code == 202, answer.text
        if sent.status_code == 202:
            events.append(sent.json()["id"])
        if fired.status_code == 202:
            jobs.append(fired.json()["job_id"])

    with httpx.Client(base_url=api, timeout=30) as client:
        for _ in range(3):
            for _ in range(10):
                send(client)
            server.restart()
            accepted = len(events)
            deadline = time.monotonic() + 120
            while len(events) < accepted + 10 and time.monotonic() < deadline:
                send(client)
                time.sleep(0.05)
    wait_until(lambda: _drained(server.url), "the queue did not drain", deadline_s=180)
    assert all(daemon.process.poll() is None for daemon in daemons)
    for daemon in daemons:
        assert daemon.stop() == 0
        assert "Traceback" not in daemon.log.read_text()
    fired_by = Counter(
        int(row[0])
        for row in rows(
            server.url,
            "SELECT n.trigger->'event'->>'id' FROM executions e "
            "JOIN envelopes n ON n.job_id = e.job_id WHERE e.loop_id = 'on_event'",
        )
    )
    assert len(events) >= 60
    assert len(jobs) >= 30
    assert {event: fired_by[event] for event in events} == dict.fromkeys(events, 1)
    ran = Counter(row[0] for row in rows(server.url, "SELECT job_id FROM executions"))
    assert {job: ran[job] for job in jobs} == dict.fromkeys(jobs, 1)
    outcomes = rows(server.url, "SELECT DISTINCT status, outcome FROM executions")
    assert outcomes == [("finished", "completed")]


def test_a_daemon_paused_past_its_lease_does_not_act_on_a_job_taken_over(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    root = on_postgres.root
    write_plugin(root, "{port: 0, lease_s: 2}")
    loop = SLOW.format(id="paused", trigger="{type: manual}", seconds=3, folder=root)
    (root / "loops" / "paused.yaml").write_text(loop)
    first = on_postgres.start("first.log")
    on_postgres.cli("trigger", "paused")
    first.wait_for(lambda line: line.get("kind") == "start")
    first.process.send_signal(signal.SIGSTOP)
    try:
        others = [on_postgres.start("second.log"), on_postgres.start("third.log")]
        wait_until(lambda: any(_ended(d) for d in others), "no daemon took the job over")
    finally:
        first.process.send_signal(signal.SIGCONT)
    first.wait_for(lambda line: line.get("kind") == "lost", timeout=120)
    assert [daemon.stop() for daemon in (first, *others)] == [0, 0, 0]
    assert effects(root) == 1
    assert [len(pids) for pids in calls(root).values()] == [1]
    assert rows(server.url, f"SELECT status, outcome FROM {ALL_JOBS} AS j") == [
        ("done", "completed")
    ]
    assert rows(server.url, "SELECT status, outcome FROM executions") == [("finished", "completed")]


def test_an_event_committed_after_a_later_one_is_dispatched(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    (on_postgres.root / "loops" / "on_event.yaml").write_text(ON_EVENT + QUEUED)
    daemon = on_postgres.start()
    engine = sa.create_engine(server.url)
    try:
        with engine.connect() as held:
            transaction = held.begin()
            signals.insert_event(held, "seo.page.late", "test", {"page": 1}, time.time())
            on_postgres.cli("emit", "seo.page.early", "--data", '{"page": 2}')
            daemon.wait_for(lambda line: line.get("event") == "seo.page.early")
            transaction.commit()
    finally:
        engine.dispose()
    daemon.wait_for(lambda line: line.get("event") == "seo.page.late" and line["kind"] == "fire")
    assert daemon.stop() == 0


def test_the_api_answers_503_while_the_database_is_down(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    (on_postgres.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    daemon = on_postgres.start()
    api = api_of(daemon)
    with httpx.Client(base_url=api, timeout=60) as client:
        server.stop()
        try:
            answers = [client.get("/executions"), client.post("/loops/by_hand/trigger", json={})]
            answers.append(client.get("/executions"))
        finally:
            server.start()
        wait_until(
            lambda: client.get("/executions").status_code == 200, "the API did not come back"
        )
    assert [answer.status_code for answer in answers] == [503, 503, 503]
    assert all(int(answer.headers["retry-after"]) >= 1 for answer in answers)
    assert all(answer.json()["error"]["code"] == "unavailable" for answer in answers)
    assert daemon.stop() == 0
    text = daemon.log.read_text()
    assert "Traceback" not in text
    assert '"kind":"store"' in text


def test_a_repeated_idempotency_key_answers_200_with_the_first_job(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    (on_postgres.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    daemon = on_postgres.start()
    with httpx.Client(base_url=api_of(daemon), timeout=60) as client:
        key = {"Idempotency-Key": "nightly-2026-11-26"}
        first = client.post("/loops/by_hand/trigger", json={}, headers=key)
        again = client.post("/loops/by_hand/trigger", json={}, headers=key)
    assert daemon.stop() == 0
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["job_id"] == first.json()["job_id"]
    assert again.json()["status"] == "duplicate"


def test_a_daemon_stopped_while_the_database_is_down_exits(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    (on_postgres.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    daemon = on_postgres.start()
    server.stop()
    try:
        daemon.wait_for(lambda line: line.get("kind") == "store")
        assert daemon.stop(timeout=120) == 0
    finally:
        server.start()
    assert '"kind":"exit"' in daemon.log.read_text()

"""Three daemons on one PostgreSQL while cron slots, events and manual jobs flow, through a
kill -9, a SIGSTOP past the lease and a database restart: every daemon stays up or restarts,
every acknowledged event and job runs, no slot runs twice, act's effect is made once per
execution, and each job ends as its execution did. Act may be called again for an execution whose
first caller was killed, or paused between the lease check and the call (no check can close that
window): the idempotency key lets the skill recognise the re-run, as a skill with side effects
must; only those callers may act on an execution besides the one that goes on."""

from __future__ import annotations

import itertools
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.daemon.conftest import Daemon, Workspace
from tests.daemon.effects import SLOW, api_of, calls, effects, rows, write_plugin
from tests.job_rows import ALL_JOBS
from tests.postgres import PostgresServer, postgres_cluster
from tests.waiting import wait_until

LEASE_S = 2.0
TRIGGERS = {
    "ticker": '{type: cron, config: {expression: "* * * * * *", catchup: latest}}',
    "on_event": '{type: event, config: {event_pattern: "chaos.*"}}',
    "by_hand": "{type: manual}",
}


@pytest.fixture
def cluster(workspace: Workspace) -> Iterator[tuple[Workspace, PostgresServer]]:
    with postgres_cluster() as server:
        workspace.env["LOOPENGINE_DATABASE"] = server.url
        yield workspace, server


class Traffic(threading.Thread):
    """Sends events and manual triggers to whichever daemon answers; keeps what was
    acknowledged (202), as a client would."""

    def __init__(self, apis: list[str]) -> None:
        super().__init__(daemon=True)
        self.apis = apis
        self.events: list[int] = []
        self.jobs: list[str] = []
        self.refused = 0
        self.running = True

    def until(self, more: int) -> None:
        """Until ``more`` events and as many jobs are acknowledged from now."""
        events, jobs = len(self.events) + more, len(self.jobs) + more
        wait_until(
            lambda: len(self.events) >= events and len(self.jobs) >= jobs,
            f"fewer than {more} firings acknowledged ({self.refused} refused)",
        )

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            for api in itertools.cycle(self.apis):
                if not self.running:
                    return
                try:
                    sent = client.post(f"{api}/events", json={"name": "chaos.tick", "data": {}})
                    fired = client.post(f"{api}/loops/by_hand/trigger", json={})
                except httpx.HTTPError:
                    self.refused += 1
                    continue
                if sent.status_code == 202:
                    self.events.append(sent.json()["id"])
                if fired.status_code == 202:
                    self.jobs.append(fired.json()["job_id"])
                self.refused += (sent.status_code != 202) + (fired.status_code != 202)
                time.sleep(0.05)


def _drain(workspace: Workspace, url: str) -> None:
    workspace.cli("pause", "ticker")
    query = "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"
    wait_until(lambda: rows(url, query) == [(0,)], "the queue did not drain", deadline_s=180)


def test_faults_on_three_daemons_lose_nothing_and_run_nothing_twice(
    cluster: tuple[Workspace, PostgresServer],
) -> None:
    workspace, server = cluster
    root = workspace.root
    write_plugin(root, f"{{port: 0, lease_s: {LEASE_S:g}, workers: 2}}")
    for loop_id, trigger in TRIGGERS.items():
        loop = SLOW.format(id=loop_id, trigger=trigger, seconds=0.3, folder=root)
        (root / "loops" / f"{loop_id}.yaml").write_text(loop)
    logs = ["a.log", "b.log", "c.log"]
    daemons = [workspace.start(log) for log in logs]
    traffic = Traffic([api_of(daemon) for daemon in daemons])
    traffic.start()
    cut_off = {daemons[1].process.pid}
    try:
        traffic.until(10)
        cut_off.add(daemons[0].process.pid)
        daemons[0].process.send_signal(signal.SIGKILL)
        daemons[0].process.wait(30)
        daemons[0] = workspace.start(logs[0])
        _pause_past_the_lease(daemons[1], [daemons[0], daemons[2]], server.url)
        server.restart()
        traffic.until(10)
        cut_off.add(daemons[2].process.pid)
        daemons[2].process.send_signal(signal.SIGKILL)
        daemons[2].process.wait(30)
        daemons[2] = workspace.start(logs[2])
        traffic.until(10)
    finally:
        traffic.running = False
        traffic.join(30)
    _drain(workspace, server.url)
    assert all(daemon.process.poll() is None for daemon in daemons)
    for daemon in daemons:
        assert daemon.stop() == 0
    for log in logs:
        assert "Traceback" not in (root / log).read_text()
    _check_every_acknowledged_firing_ran_once(server.url, traffic)
    _check_each_slot_ran_once(server.url)
    _check_jobs_end_as_their_executions(server.url)
    _check_act_ran_once_per_execution(root, server.url, cut_off)


def _pause_past_the_lease(paused: Daemon, others: list[Daemon], url: str) -> None:
    """SIGSTOP ``paused`` while a job of its runs, until another daemon resumes that job (or,
    should it have ended first, until the paused daemon's heartbeat is older than its lease)."""

    def start(line: dict[str, object]) -> bool:
        return line.get("kind") == "start"

    started = paused.wait_for(start, count=sum(map(start, paused.lines())) + 1)
    paused.process.send_signal(signal.SIGSTOP)
    owner = str(paused.wait_for(lambda line: line.get("kind") == "ready")["daemon"])
    beat = f"SELECT count(*) FROM daemons WHERE id = '{owner}' AND heartbeat_at < {{now}}"

    def taken_over() -> bool:
        resumed = any(
            line.get("kind") == "resume" and line.get("job") == started["job"]
            for other in others
            for line in other.lines()
        )
        stale = rows(url, beat.format(now=time.time() - 2 * LEASE_S))
        return resumed or stale == [(1,)]

    try:
        wait_until(taken_over, "the paused daemon's job was not taken over")
    finally:
        paused.process.send_signal(signal.SIGCONT)


def _check_every_acknowledged_firing_ran_once(url: str, traffic: Traffic) -> None:
    query = (
        "SELECT n.trigger->'event'->>'id' FROM executions e "
        "JOIN envelopes n ON n.job_id = e.job_id WHERE e.loop_id = 'on_event'"
    )
    by_event = Counter(int(str(row[0])) for row in rows(url, query))
    assert len(traffic.events) > 20
    assert {event: by_event[event] for event in traffic.events} == dict.fromkeys(traffic.events, 1)
    by_job = Counter(row[0] for row in rows(url, "SELECT job_id FROM executions"))
    assert len(traffic.jobs) > 20
    assert {job: by_job[job] for job in traffic.jobs} == dict.fromkeys(traffic.jobs, 1)


def _check_each_slot_ran_once(url: str) -> None:
    query = (
        "SELECT n.trigger->>'scheduled_for' FROM executions e "
        "JOIN envelopes n ON n.job_id = e.job_id WHERE e.loop_id = 'ticker'"
    )
    slots = Counter(row[0] for row in rows(url, query))
    assert slots
    assert max(slots.values()) == 1


def _check_jobs_end_as_their_executions(url: str) -> None:
    query = (
        f"SELECT j.status, j.outcome, e.status, e.outcome FROM {ALL_JOBS} AS j "
        "JOIN executions e ON e.id = j.execution_id WHERE j.status <> 'skipped'"
    )
    pairs = Counter(rows(url, query))
    assert set(pairs) == {("done", "completed", "finished", "completed")}, pairs
    unfinished = rows(url, "SELECT count(*) FROM executions WHERE status <> 'finished'")
    assert unfinished == [(0,)]


def _check_act_ran_once_per_execution(root: Path, url: str, cut_off: set[int]) -> None:
    """Every execution made its effect once; a key called more than once was called by at most
    one process that was neither killed nor paused."""
    callers = calls(root)
    executions = rows(url, "SELECT count(*) FROM executions")[0][0]
    assert effects(root) == len(callers) == executions
    for key, pids in callers.items():
        assert len(set(pids) - cut_off) <= 1, (key, pids)

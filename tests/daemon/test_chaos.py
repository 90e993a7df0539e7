"""Three daemons on one PostgreSQL while cron slots, events and manual jobs flow, through a
kill -9, a SIGSTOP past the lease and a database restart: every daemon stays up or restarts,
every acknowledged event and job runs, no slot runs twice, act runs once per execution (a re-run
after a kill is recognised by its idempotency key, as a skill with side effects must), and each
job ends as its execution did."""

from __future__ import annotations

import itertools
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.daemon.conftest import Daemon, Workspace
from tests.postgres import PostgresServer, postgres_cluster
from tests.waiting import wait_until

SKILLS = '''\
import os
import time
from pathlib import Path

from loopengine import SkillContext, skill


@skill("nap")
def nap(ctx: SkillContext, seconds: float) -> dict[str, float]:
    """Take a while, so that faults land mid-execution."""
    time.sleep(seconds)
    return {"slept": seconds}


@skill("mark")
def mark(ctx: SkillContext, folder: str) -> dict[str, bool]:
    """An effect done once per idempotency key; every call is logged with the caller's pid."""
    root = Path(folder)
    with open(root / "calls.txt", "a") as calls:
        calls.write(f"{ctx.idempotency_key} {os.getpid()}\\n")
    done = root / "done" / ctx.idempotency_key.replace("/", "_").replace(":", "_")
    if done.exists():
        return {"again": True}
    done.write_text(str(os.getpid()))
    return {"again": False}
'''

LOOP = """\
id: {id}
trigger: {trigger}
concurrency: {{max: 2, on_overlap: queue, max_queue: 10000}}
analyze:
  analysis_steps:
    - {{name: slow, skill_id: nap, params: {{seconds: 0.3}}}}
decide: {{decision_tree: [], fallback_action: touch}}
act:
  actions:
    - {{action_id: touch, skill_id: mark, params: {{folder: {folder}}}}}
"""
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


def _api(daemon: Daemon) -> str:
    return str(daemon.wait_for(lambda line: line.get("kind") == "ready")["api"])


def _rows(url: str, query: str) -> list[tuple[object, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(query))]
    finally:
        engine.dispose()


def _drain(workspace: Workspace, url: str) -> None:
    workspace.cli("pause", "ticker")
    query = "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"
    wait_until(lambda: _rows(url, query) == [(0,)], "the queue did not drain", deadline_s=180)


def test_faults_on_three_daemons_lose_nothing_and_run_nothing_twice(
    cluster: tuple[Workspace, PostgresServer],
) -> None:
    workspace, server = cluster
    root = workspace.root
    (root / "done").mkdir()
    (root / "skills.py").write_text(SKILLS)
    (root / "loopengine.yaml").write_text(
        "daemon: {port: 0, lease_s: 2, workers: 2}\nplugins: [./skills.py]\n"
    )
    for loop_id, trigger in TRIGGERS.items():
        loop = LOOP.format(id=loop_id, trigger=trigger, folder=root)
        (root / "loops" / f"{loop_id}.yaml").write_text(loop)
    logs = ["a.log", "b.log", "c.log"]
    daemons = [workspace.start(log) for log in logs]
    traffic = Traffic([_api(daemon) for daemon in daemons])
    traffic.start()
    killed: set[int] = set()
    try:
        traffic.until(10)
        killed.add(daemons[0].process.pid)
        daemons[0].process.send_signal(signal.SIGKILL)
        daemons[0].process.wait(30)
        daemons[0] = workspace.start(logs[0])
        daemons[1].process.send_signal(signal.SIGSTOP)
        try:
            daemons[2].wait_for(lambda line: line.get("kind") == "resume", timeout=60)
        finally:
            daemons[1].process.send_signal(signal.SIGCONT)
        server.restart()
        traffic.until(10)
        killed.add(daemons[2].process.pid)
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
    _check_act_ran_once_per_execution(root, server.url, killed)


def _check_every_acknowledged_firing_ran_once(url: str, traffic: Traffic) -> None:
    query = "SELECT trigger->'event'->>'id' FROM executions WHERE loop_id = 'on_event'"
    by_event = Counter(int(str(row[0])) for row in _rows(url, query))
    assert len(traffic.events) > 20
    assert {event: by_event[event] for event in traffic.events} == dict.fromkeys(traffic.events, 1)
    by_job = Counter(row[0] for row in _rows(url, "SELECT job_id FROM executions"))
    assert len(traffic.jobs) > 20
    assert {job: by_job[job] for job in traffic.jobs} == dict.fromkeys(traffic.jobs, 1)


def _check_each_slot_ran_once(url: str) -> None:
    query = "SELECT trigger->>'scheduled_for' FROM executions WHERE loop_id = 'ticker'"
    slots = Counter(row[0] for row in _rows(url, query))
    assert slots
    assert max(slots.values()) == 1


def _check_jobs_end_as_their_executions(url: str) -> None:
    query = (
        "SELECT j.status, j.outcome, e.status, e.outcome FROM jobs j "
        "JOIN executions e ON e.id = j.execution_id WHERE j.status <> 'skipped'"
    )
    pairs = Counter(_rows(url, query))
    assert set(pairs) == {("done", "completed", "finished", "completed")}, pairs
    unfinished = _rows(url, "SELECT count(*) FROM executions WHERE status <> 'finished'")
    assert unfinished == [(0,)]


def _check_act_ran_once_per_execution(root: Path, url: str, killed: set[int]) -> None:
    """Every execution made its effect once; a key called again was first called by a process
    killed before it could commit (a re-run the key lets the skill recognise)."""
    callers: dict[str, list[int]] = defaultdict(list)
    for line in (root / "calls.txt").read_text().splitlines():
        key, pid = line.split()
        callers[key].append(int(pid))
    executions = _rows(url, "SELECT count(*) FROM executions")[0][0]
    assert len(list((root / "done").iterdir())) == len(callers) == executions
    for key, pids in callers.items():
        assert set(pids[:-1]) <= killed, (key, pids)

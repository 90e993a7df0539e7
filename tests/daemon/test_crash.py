"""Crash safety: a daemon running a seconds-cron loop is killed with SIGKILL at many moments
(random, each within a window timed from what the daemon logs) and restarted; every slot is run
exactly once or recorded as a non-run with its reason, and no job is lost."""

from __future__ import annotations

import itertools
import random
import signal
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing

import pytest

from tests.daemon.conftest import TICK, Daemon, Workspace
from tests.job_rows import ALL_JOBS

PERIOD_S = 2.0
KILLS = 10
"""Per run, taking the moments in turn: 40 kills over the three policies and two durabilities."""

Kill = Callable[[Daemon, random.Random], None]
"""Ends a ready daemon with SIGKILL at one kind of moment."""


def _within(kind: str, window_s: float) -> Kill:
    """A kill a random 0 to ``window_s`` seconds after the daemon logs its first ``kind`` line."""

    def kill(daemon: Daemon, moments: random.Random) -> None:
        daemon.wait_for(lambda line: line.get("kind") == kind)
        time.sleep(moments.uniform(0.0, window_s))
        daemon.kill()

    return kill


MOMENTS: dict[str, Kill] = {
    "while a job runs (or resumes)": _within("start", 0.05),
    "right after a job starts, before its first commit": _within("start", 0.0),
    "between a slot's fire and its job's start": _within("fire", 0.02),
    "while it catches up after the restart": _within("ready", 0.1),
    "at any moment of a period": _within("ready", PERIOD_S),
}


def _unfinished(workspace: Workspace) -> int:
    with closing(sqlite3.connect(f"file:{workspace.database}?mode=ro", uri=True)) as db:
        query = "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"
        return int(db.execute(query).fetchone()[0])


def _drain(workspace: Workspace, daemon: Daemon) -> None:
    """Once the daemon has caught up, pause the loop; wait until its scheduler has seen the pause
    and no job is queued or running."""
    daemon.wait_for(lambda line: line.get("kind") in ("fire", "skip"))
    workspace.cli("pause", "tick")
    daemon.wait_for(lambda line: line.get("kind") == "skip" and line.get("status") == "paused")
    daemon.wait_until(lambda: _unfinished(workspace) == 0, "the queue did not drain")


@pytest.mark.parametrize(
    ("catchup", "durability"),
    [("skip", "phase"), ("latest", "phase"), ("all", "phase"), ("latest", "execution")],
)
def test_sigkill_at_random_moments_loses_no_slot_and_runs_none_twice(
    workspace: Workspace, catchup: str, durability: str
) -> None:
    """With ``durability: execution`` nothing of an execution is committed before its end: a
    kill while one runs always leaves it with no phase committed, to start over."""
    loop = TICK.format(catchup=catchup) + f"durability: {durability}\n"
    (workspace.root / "loops" / "tick.yaml").write_text(loop)
    moments = random.Random(catchup)
    for moment, kill in itertools.islice(itertools.cycle(MOMENTS.items()), KILLS):
        daemon = workspace.start()
        kill(daemon, moments)
        exited = daemon.process.returncode
        assert exited == -signal.SIGKILL, (
            f"exited ({exited}) before its kill {moment}: {daemon.tail()}"
        )
    daemon = workspace.start()
    _drain(workspace, daemon)
    assert daemon.stop() == 0

    with closing(sqlite3.connect(workspace.database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ticks = db.execute(
            "SELECT scheduled_for, status, reason, job_id FROM ticks ORDER BY scheduled_for"
        ).fetchall()
        slots = [row[0] for row in ticks]
        assert len(ticks) >= KILLS // 2
        assert all(b - a == PERIOD_S for a, b in itertools.pairwise(slots)), slots
        for slot, status, reason, job_id in ticks:
            if status == "queued":
                job = db.execute(
                    f"SELECT status FROM {ALL_JOBS} AS j WHERE id = ?", (job_id,)
                ).fetchone()
                assert job == ("done",), (slot, job)
                runs = db.execute(
                    "SELECT outcome FROM executions WHERE job_id = ?", (job_id,)
                ).fetchall()
                assert runs == [("completed",)], (slot, runs)
            else:
                assert status in ("missed", "coalesced", "skipped", "paused"), status
                assert reason, (slot, status)
        left = db.execute("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")
        assert left.fetchone() == (0,)

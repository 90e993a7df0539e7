"""Crash safety: a daemon running a seconds-cron loop is killed with SIGKILL at random moments
and restarted; every slot is run exactly once or recorded as a non-run with its reason, and no
job is lost."""

from __future__ import annotations

import itertools
import random
import signal
import sqlite3
import time

import pytest

from tests.daemon.conftest import TICK, Workspace

KILLS = 10
"""Per catch-up policy: 30 kills over the three policies."""
PERIOD_S = 2.0


def _drain(workspace: Workspace) -> None:
    """Pause the loop and wait until no job is queued or running."""
    workspace.cli("pause", "tick")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        depth = workspace.json("status")["queue"]
        if depth == {"queued": 0, "running": 0}:
            return
        time.sleep(0.2)
    raise AssertionError(f"the queue did not drain: {depth}")


@pytest.mark.parametrize("catchup", ["skip", "latest", "all"])
def test_sigkill_at_random_moments_loses_no_slot_and_runs_none_twice(
    workspace: Workspace, catchup: str
) -> None:
    (workspace.root / "loops" / "tick.yaml").write_text(TICK.format(catchup=catchup))
    moments = random.Random(catchup)
    for _ in range(KILLS):
        daemon = workspace.start()
        time.sleep(moments.uniform(0.3, 3.0))
        daemon.process.send_signal(signal.SIGKILL)
        daemon.process.wait(10)
    daemon = workspace.start()
    time.sleep(PERIOD_S * 1.5)
    _drain(workspace)
    assert daemon.stop() == 0

    with sqlite3.connect(workspace.database) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ticks = db.execute(
            "SELECT scheduled_for, status, reason, job_id FROM ticks ORDER BY scheduled_for"
        ).fetchall()
        slots = [row[0] for row in ticks]
        assert len(ticks) >= KILLS // 2
        assert all(b - a == PERIOD_S for a, b in itertools.pairwise(slots)), slots
        for slot, status, reason, job_id in ticks:
            if status == "queued":
                job = db.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
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

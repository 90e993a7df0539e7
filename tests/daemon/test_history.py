"""A daemon sweeps the jobs that ended out of the queue into their history as it ticks; a sweep
that fails is logged and tried again at the next tick, and the daemon goes on."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from loopengine.app import Runtime, open_runtime
from loopengine.daemon import DaemonLog
from loopengine.daemon._daemon import Daemon
from loopengine.errors import StorageError
from loopengine.store import JobEnvelope, history, queue
from tests.daemon.conftest import BY_HAND, Workspace


def _where(database: Path, job_id: str) -> list[str]:
    """The tables holding job ``job_id``."""
    with closing(sqlite3.connect(database)) as connection:
        return [
            table
            for table in ("jobs", "job_history")
            if connection.execute(f"SELECT 1 FROM {table} WHERE id = ?", (job_id,)).fetchone()
        ]


def test_a_job_swept_to_history_still_answers_its_idempotency_key(workspace: Workspace) -> None:
    (workspace.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    daemon = workspace.start()
    api = str(daemon.wait_for(lambda line: line.get("kind") == "ready")["api"])
    with httpx.Client(base_url=api, timeout=30) as client:

        def trigger() -> httpx.Response:
            return client.post("/loops/by_hand/trigger", json={}, headers={"Idempotency-Key": "k1"})

        first = trigger().json()
        daemon.wait_until(
            lambda: _where(workspace.database, first["job_id"]) == ["job_history"],
            "the job was not swept",
        )
        again = trigger()
    assert daemon.stop() == 0
    assert (again.status_code, again.json()) == (200, {**first, "status": "duplicate"})


@pytest.fixture
async def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    (tmp_path / "loops").mkdir()
    config = tmp_path / "loopengine.yaml"
    config.write_text("daemon: {port: 0}\n")
    monkeypatch.chdir(tmp_path)
    async with open_runtime(config) as opened:
        yield opened


def _ended(job_id: str) -> queue.Job:
    return queue.Job(
        id=job_id,
        loop_id="tick",
        trigger={"type": "manual"},
        envelope=JobEnvelope(job_id, job_id, "tick", {}, {}, {}, job_id).as_dict(),
        idempotency_key=job_id,
        status=queue.DONE,
        not_before=1.0,
        created_at=1.0,
        outcome="completed",
        finished_at=1.0,
    )


@pytest.mark.anyio
async def test_a_sweep_moves_every_batch_of_ended_jobs(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "BATCH", 2)
    await runtime.store.write(queue.insert_jobs, [_ended(f"j{index}") for index in range(5)])
    await Daemon(runtime, tmp_path / "loops", DaemonLog(io.StringIO())).sweep()
    left = await runtime.store.read(lambda c: c.exec_driver_sql("SELECT id FROM jobs").all())
    assert left == []
    found = [await runtime.store.read(queue.get_job, f"j{index}") for index in range(5)]
    assert [job.status if job else None for job in found] == [queue.DONE] * 5


@pytest.mark.anyio
async def test_a_sweep_that_fails_is_logged_and_the_daemon_goes_on(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*_: object) -> int:
        raise StorageError("database is locked")

    monkeypatch.setattr(history, "sweep", failing)
    said = io.StringIO()
    await Daemon(runtime, tmp_path / "loops", DaemonLog(said)).sweep()
    assert "cannot move ended jobs to history: database is locked; tried again in 5 s" in (
        said.getvalue()
    )

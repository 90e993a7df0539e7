"""A full disk under the daemon's SQLite store (a small tmpfs): writes answer 503 with a clear
message, an execution running meanwhile waits and goes on once space returns, and its job and
execution end alike."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.daemon.conftest import Workspace
from tests.daemon.effects import SLOW, calls, effects, write_plugin
from tests.job_rows import ALL_JOBS

SIZE = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> Path:
    """Take every free byte of ``disk``."""
    filler = disk / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65_536, 1):
            try:
                while True:
                    os.write(descriptor, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(descriptor)
    return filler


def _sqlite_rows(database: Path, query: str) -> list[tuple[object, ...]]:
    import sqlite3

    with sqlite3.connect(database) as db:
        return db.execute(query).fetchall()


def test_a_full_disk_pauses_the_work_and_answers_503_until_space_returns(
    workspace: Workspace, small_disk: Path
) -> None:
    root = workspace.root
    database = small_disk / "store.db"
    workspace.env["LOOPENGINE_DATABASE"] = f"sqlite:///{database}"
    write_plugin(root)
    loop = SLOW.format(id="paused", trigger="{type: manual}", seconds=3, folder=root)
    (root / "loops" / "paused.yaml").write_text(loop)
    daemon = workspace.start()
    api = str(daemon.wait_for(lambda line: line.get("kind") == "ready")["api"])
    with httpx.Client(base_url=api, timeout=30) as client:
        assert client.post("/loops/paused/trigger", json={}).status_code == 202
        daemon.wait_for(lambda line: line.get("kind") == "start")
        filler = _fill(small_disk)
        daemon.wait_for(lambda line: line.get("kind") == "store", timeout=60)
        refused = client.post("/loops/paused/trigger", json={})
        filler.unlink()
        daemon.wait_for(lambda line: line.get("kind") == "end", timeout=120)
        deadline = time.monotonic() + 60
        while (again := client.post("/loops/paused/trigger", json={})).status_code == 503:
            assert time.monotonic() < deadline, again.text
            time.sleep(0.2)
    assert refused.status_code == 503
    assert "disk is full" in refused.json()["error"]["message"]
    assert int(refused.headers["retry-after"]) >= 1
    assert again.status_code == 202
    daemon.wait_for(
        lambda line: line.get("kind") == "end" and line.get("job") == again.json()["job_id"],
        timeout=120,
    )
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.log.read_text()
    jobs = _sqlite_rows(
        database, f"SELECT status, outcome FROM {ALL_JOBS} AS j ORDER BY created_at"
    )
    runs = _sqlite_rows(database, "SELECT status, outcome FROM executions ORDER BY started_at")
    assert jobs == [("done", "completed")] * 2
    assert runs == [("finished", "completed")] * 2
    assert effects(root) == 2
    assert [len(pids) for pids in calls(root).values()] == [1, 1]
    assert os.path.exists(database)

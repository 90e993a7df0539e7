"""kill -9 at random moments loses no acknowledged execution or phase, and the file stays sound."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio

from loopengine.contract import Outcome
from loopengine.engine import recover_interrupted, resume
from loopengine.skills import Registry
from tests.conftest import ROOT
from tests.engine.conftest import open_harness

KILLS = 50
LOOP = """\
id: crashy
trigger: {type: manual}
detect:
  sources: [{skill: report, name: s, params: {values: {n: 1}}}]
analyze:
  analysis_steps: [{name: a, skill_id: slow, params: {seconds: 0.004}}]
decide: {fallback_action: go}
act:
  actions: [{action_id: go, skill_id: fix, rollback_skill: undo}]
validate:
  assertions: [{expression: 'n == `1`'}]
learn:
  feedback_sources: [{type: outcome, name: ok}]
store:
  artifacts: [{type: outcome, name: summary, storage: sqlite}]
"""


def _run_and_kill(database: Path, loop: Path, rng: random.Random) -> list[tuple[str, str]]:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_child", str(database), str(loop)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    acks: list[tuple[str, str]] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            _, execution_id, what = line.split()
            acks.append((execution_id, what))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(rng.uniform(0.01, 0.6))
    child.kill()
    child.wait()
    reader.join(timeout=5)
    child.stdout.close()
    return acks


def _check(database: Path, acks: list[tuple[str, str]]) -> list[str]:
    with sqlite3.connect(database) as db:
        problems = (
            [] if db.execute("PRAGMA integrity_check").fetchone()[0] == "ok" else ["integrity"]
        )
        for execution_id, what in acks:
            row = db.execute(
                "SELECT status FROM executions WHERE id = ?", (execution_id,)
            ).fetchone()
            if row is None:
                problems.append(f"lost execution {execution_id}")
            elif what == "finished" and row[0] != "finished":
                problems.append(f"lost the end of {execution_id}")
            elif what not in ("started", "finished", "waiting"):
                found = db.execute(
                    "SELECT 1 FROM phase_results WHERE execution_id = ? AND phase = ?",
                    (execution_id, what),
                ).fetchone()
                if found is None:
                    problems.append(f"lost phase {what} of {execution_id}")
    return problems


def test_kill_9_loses_nothing_acknowledged(tmp_path: Path, engine_registry: Registry) -> None:
    database = tmp_path / "loopengine.db"
    loop = tmp_path / "crashy.yaml"
    loop.write_text(LOOP)
    rng = random.Random(20261122)
    acknowledged = 0
    for _ in range(KILLS):
        acks = _run_and_kill(database, loop, rng)
        acknowledged += len(acks)
        assert _check(database, acks) == []
    assert acknowledged > KILLS
    print(f"{KILLS} kills, {acknowledged} acknowledged commits, 0 lost, integrity ok every time")

    async def resume_the_interrupted() -> None:
        async with open_harness(tmp_path, engine_registry) as harness:
            interrupted = await recover_interrupted(harness.engine)
            assert interrupted
            for execution_id in interrupted[:5]:
                done = await resume(harness.engine, harness.load_loop, execution_id)
                assert done.outcome is Outcome.COMPLETED, (execution_id, done.error)

    anyio.run(resume_the_interrupted)

"""kill -9 at random moments loses no acknowledged execution or phase, and the file stays sound.
Each killed process is forked from one that has imported everything (tests/engine/crash_child.py),
so that fifty kills cost no fifty interpreter starts."""

from __future__ import annotations

import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from loopengine.contract import Outcome
from loopengine.engine import recover_interrupted, resume
from loopengine.skills import Registry
from tests.conftest import ROOT
from tests.engine.conftest import open_harness
from tests.waiting import DEADLINE_S

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


@dataclass(frozen=True)
class _Forker:
    """The crash child: a process that forks, on request, a child running executions."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str]

    def run_and_kill(self, rng: random.Random) -> list[tuple[str, str]]:
        """Fork a child, kill it with -9 a random moment after it is ready; what it
        acknowledged."""
        assert self.process.stdin is not None
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        ready = self.lines.get(timeout=DEADLINE_S).split()
        assert ready[0] == "ready", ready
        time.sleep(rng.uniform(0.01, 0.6))
        os.kill(int(ready[1]), signal.SIGKILL)
        acks = []
        while (line := self.lines.get(timeout=DEADLINE_S)).startswith("ack "):
            _, execution_id, what = line.split()
            acks.append((execution_id, what))
        assert line == f"dead {-signal.SIGKILL.value}", line
        return acks


@contextmanager
def _forker(database: Path, loop: Path) -> Iterator[_Forker]:
    """The crash child, its output read line by line as it comes; killed with its children."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_child", str(database), str(loop)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield _Forker(process, lines)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        reader.join()
        for stream in (process.stdin, process.stdout):
            assert stream is not None
            stream.close()


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
                    "SELECT 1 FROM phases, json_each(phases.results) AS done"
                    " WHERE execution_id = ? AND json_extract(done.value, '$.phase') = ?",
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
    with _forker(database, loop) as forker:
        for _ in range(KILLS):
            acks = forker.run_and_kill(rng)
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

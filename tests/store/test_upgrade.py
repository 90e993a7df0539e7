"""A store as loopengine 0.1.0 left it (schema 11, ``data/store_v11.sql``) opens with this one
(``Store.open`` migrates it): its executions, its queued job, its pending approval and its chat
thread are all there, and the job runs and the approval is answered."""

from __future__ import annotations

import importlib.util
import sqlite3
import time
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.engine import Engine, Services, answer_approval
from loopengine.skills import Registry
from loopengine.store import Store, executions, queue, threads
from tests.daemon.working import work_off

T = TypeVar("T")
DUMP = Path(__file__).parent / "data" / "store_v11.sql"
QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"
QUEUED_JOB, QUEUED_KEY = (
    "c618b80c6379c31a42ce68a0bcd731e2",
    "manual:1809ccf1121ded8ec5ad42669c2d04c3",
)
WAITING = "95d7bac5ee97d200793f7549022feded"
FINISHED = {
    "6af071bd151172ed2498ea32e92a8003",
    "58761e83ecd00212d9dedc276ef35e45",
    "928037262e2783c7ceb8ebf659b756e5",
}
TIDY = """\
id: tidy
trigger: {type: manual}
params:
  folder: {type: string, default: here}
decide: {decision_tree: [], fallback_action: log_only}
"""


@pytest.fixture
def url(tmp_path: Path) -> str:
    """The dump loaded into a new SQLite file, its approval's window (four hours from when the
    dump was made) moved to end an hour from now."""
    path = tmp_path / "store.db"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(DUMP.read_text())
        connection.execute("UPDATE approvals SET deadline = ?", (time.time() + 3600,))
        connection.commit()
    return f"sqlite:///{path}"


def _on(url: str, steps: Callable[[Store], Awaitable[T]]) -> T:
    async def main() -> T:
        async with Store.open(url) as store:
            return await steps(store)

    return anyio.run(main)


def _registry() -> Registry:
    """The built-in skills and the quickstart's (its cache loop waits for approval)."""
    registry = builtin_registry()
    spec = importlib.util.spec_from_file_location("cache_skills", QUICKSTART / "cache_skills.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    registry.add_module(module)
    return registry


def _load(registry: Registry, path: Path) -> Loop:
    report = LoopLoader(Env(registry, frozenset(Config().storage))).load_file(path)
    assert report.loop is not None, report.diagnostics
    return report.loop


def test_its_executions_keep_their_records(url: str) -> None:
    async def steps(store: Store) -> tuple[set[str], executions.ExecutionRecord | None]:
        listed = await store.read(executions.list_executions, limit=10)
        return {row.id for row in listed}, await store.read(
            executions.read_record, "6af071bd151172ed2498ea32e92a8003"
        )

    listed, record = _on(url, steps)
    assert listed == {*FINISHED, WAITING}
    assert record is not None
    assert record.envelope is not None
    assert record.envelope.payload == {"folder": "x"}
    assert (record.execution.outcome, len(record.phases)) == ("completed", 7)


def test_its_queued_job_runs(url: str, tmp_path: Path) -> None:
    (tmp_path / "manual.yaml").write_text(TIDY)
    loop = _load(builtin_registry(), tmp_path / "manual.yaml")

    async def steps(store: Store) -> tuple[queue.Job, executions.ExecutionRecord | None]:
        job = await work_off(store, loop, QUEUED_JOB, tmp_path)
        return job, await store.read(executions.read_record, job.execution_id or "")

    job, record = _on(url, steps)
    assert (job.status, job.outcome) == (queue.DONE, "completed")
    assert record is not None
    assert record.envelope is not None
    assert (record.envelope.job_id, record.envelope.idempotency_key) == (QUEUED_JOB, QUEUED_KEY)


def test_its_pending_approval_is_answered(url: str) -> None:
    registry = _registry()
    loop = _load(registry, QUICKSTART / "cache_cleanup.yaml")

    async def steps(store: Store) -> tuple[str, str | None]:
        engine = Engine(Services(registry, store, base=QUICKSTART))
        done = await answer_approval(engine, lambda _f: loop, WAITING, False, "not this week")
        row = await store.read(executions.get_execution, WAITING)
        assert row is not None
        return done.outcome.value, row.outcome

    assert _on(url, steps) == ("rejected", "rejected")


def test_its_thread_keeps_its_messages(url: str) -> None:
    thread = _on(url, lambda store: store.read(threads.read_thread, "s1"))
    said = [(message.role, message.content) for message in thread.messages]
    assert thread.version == 4
    assert said == [
        ("user", "hello there"),
        ("assistant", "hello there"),
        ("user", "and again"),
        ("assistant", "and again"),
    ]

"""The queue workers in process: an unexpected error at any step of running a job fails that job
alone, with its message, and ends its execution with it; the workers go on with the next job."""

from __future__ import annotations

import io
import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from loopengine.app import Firing
from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog
from loopengine.daemon._workers import Workers
from loopengine.engine import Engine, Services, resume
from loopengine.store import JobEnvelope, Store, executions, intake, queue
from loopengine.testing import memory_store
from tests.daemon.working import served
from tests.engine import skills_for_tests

STEADY = """\
id: steady
trigger: {type: manual}
concurrency: {on_overlap: queue}
analyze:
  analysis_steps:
    - {name: wait, skill_id: slow, params: {seconds: 0.3}}
decide: {decision_tree: [], fallback_action: log_only}
"""


def _loop(tmp_path: Path) -> Loop:
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    path = tmp_path / "steady.yaml"
    path.write_text(textwrap.dedent(STEADY))
    report = LoopLoader(Env(registry, frozenset(Config().storage))).load_file(path)
    assert report.loop is not None, report.diagnostics
    return report.loop


def _once(original: Callable[..., Any], step: str, times: int = 1) -> Callable[..., Any]:
    """``original``, failing with an unexpected error the first ``times`` it is called (an
    operation the store runs in the event loop is tried once more in its thread: twice is
    once for its caller)."""
    calls = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= times:
            raise RuntimeError(f"injected at {step}")
        return original(*args, **kwargs)

    return failing


def _async_once(original: Callable[..., Any], step: str) -> Callable[..., Any]:
    calls = []

    async def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(f"injected at {step}")
        return await original(*args, **kwargs)

    return failing


STEPS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "claim": lambda m: m.setattr(queue, "claim_jobs", _once(queue.claim_jobs, "claim", 2)),
    "envelope": lambda m: m.setattr(
        JobEnvelope, "from_row", _once(JobEnvelope.from_row, "envelope")
    ),
    "take": lambda m: m.setattr(
        executions, "take_envelope", _once(executions.take_envelope, "take", 2)
    ),
    "engine": lambda m: m.setattr(Engine, "prelude", staticmethod(_once(Engine.prelude, "engine"))),
    "resume": lambda m: m.setattr(
        "loopengine.daemon._workers.resume", _async_once(resume, "resume")
    ),
    # A job's end shares its transaction with the worker's next claim: the group inline, the
    # group in the thread, then the end alone is three calls.
    "finish": lambda m: m.setattr(queue, "finish_job", _once(queue.finish_job, "finish", 3)),
    "heartbeat": lambda m: m.setattr(
        queue, "renew_leases", _once(queue.renew_leases, "heartbeat", 2)
    ),
}
"""Where an unexpected error is injected, once."""


async def _until(store: Store, done: Callable[[dict[str, int]], bool]) -> dict[str, int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        depth = await store.read(queue.queue_depth)
        if done(depth):
            return depth
        await anyio.sleep(0.02)
    raise AssertionError(f"the queue did not drain: {depth}")


def _run(tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], str]:
    loop = _loop(tmp_path)
    log = io.StringIO()

    async def main() -> list[Any]:
        async with memory_store() as store:
            registry = builtin_registry()
            registry.add_module(skills_for_tests)
            engine = Engine(Services(registry, store, base=tmp_path))
            workers = Workers(
                engine,
                served(loop),
                lambda _file: loop,
                DaemonLog(log, as_json=True),
                owner="here:1:w",
                count=1,
                lease_s=0.6,
                poll_s=0.01,
            )
            if step == "resume":
                await _interrupted_execution(store, engine, loop)
            STEPS[step](monkeypatch)
            for key in ("first", "second"):
                firing = Firing(loop, {"type": "manual"}, key)
                now = time.time()
                await store.write(intake.enqueue, firing.arrival(now), now)
            async with anyio.create_task_group() as group:
                group.start_soon(workers.run)
                await _until(store, lambda d: d == {"queued": 0, "running": 0})
                group.cancel_scope.cancel()
            return await store.read(_jobs_and_executions)

    return anyio.run(main), log.getvalue()


async def _interrupted_execution(store: Store, engine: Engine, loop: Loop) -> None:
    """An execution of the first job that a dead daemon left after its first phases: the job
    is queued again, its execution interrupted."""
    now = time.time()
    await store.write(intake.enqueue, Firing(loop, {"type": "manual"}, "first").arrival(now), now)
    claimed = await store.write(queue.claim_next, {loop.id: 1}, "dead:1:w", time.time, 30.0)
    assert claimed is not None
    job, lease = claimed
    envelope = JobEnvelope.from_row(job.envelope)
    done = await engine.run(loop, envelope=envelope, trigger={"type": "manual"}, lease=lease)
    await store.write(queue.requeue, lease, time.time())
    await store.write(
        lambda c: c.exec_driver_sql(
            "UPDATE executions SET status = 'interrupted', outcome = 'interrupted' WHERE id = ?",
            (done.execution_id,),
        )
    )


def _jobs_and_executions(connection: Any) -> list[Any]:
    rows = connection.exec_driver_sql(
        "SELECT n.idempotency_key, j.status, j.outcome, j.reason, e.status, e.outcome "
        "FROM jobs j JOIN envelopes n ON n.job_id = j.id "
        "LEFT JOIN executions e ON e.id = j.execution_id ORDER BY j.created_at"
    )
    return [tuple(row) for row in rows]


def _errors(log: str, text: str) -> int:
    """How many ``error`` lines of the log hold ``text``."""
    lines = [json.loads(line) for line in log.splitlines()]
    return sum(1 for line in lines if line["kind"] == "error" and text in line["message"])


@pytest.mark.parametrize("step", ["envelope", "take", "engine", "resume"])
def test_an_unexpected_error_fails_its_job_alone_and_the_next_job_runs(
    tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, log = _run(tmp_path, step, monkeypatch)
    message = f"internal error: RuntimeError: injected at {step}"
    first, second = rows
    assert first[:4] == ("first", "done", "failed", message)
    assert first[4:] in ((None, None), ("finished", "failed"))
    assert second == ("second", "done", "completed", None, "finished", "completed")
    assert _errors(log, message) == 1


@pytest.mark.parametrize("step", ["claim", "finish", "heartbeat"])
def test_an_unexpected_error_around_a_job_is_logged_and_every_job_still_runs(
    tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, log = _run(tmp_path, step, monkeypatch)
    assert [row[1:3] for row in rows] == [("done", "completed")] * 2
    assert all(row[4:] == ("finished", "completed") for row in rows)
    assert _errors(log, f"RuntimeError: injected at {step}") == 1

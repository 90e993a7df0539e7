"""The queue workers in process: an unexpected error at any step of running a job fails that job
alone, with its message, and ends its execution with it; the workers go on with the next job. Jobs
claimed together start together on free workers, their leases renewed until they start."""

from __future__ import annotations

import io
import json
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from loopengine.app import Firing
from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog
from loopengine.daemon import _workers as working
from loopengine.daemon._workers import Workers
from loopengine.engine import Engine, Services, resume
from loopengine.store import JobEnvelope, Store, effects, executions, intake, learning, queue
from loopengine.testing import memory_store
from tests.daemon.working import served
from tests.engine import skills_for_tests
from tests.waiting import DEADLINE_S

STEADY = """\
id: steady
trigger: {type: manual}
concurrency: {on_overlap: queue}
analyze:
  analysis_steps:
    - {name: wait, skill_id: slow, params: {seconds: 0.3}}
decide: {decision_tree: [], fallback_action: log_only}
"""

LONG = """\
id: long
trigger: {type: manual}
concurrency: {max: 4, on_overlap: queue}
analyze:
  analysis_steps:
    - {name: wait, skill_id: slow, params: {seconds: 600}}
decide: {decision_tree: [], fallback_action: log_only}
"""

SHORT = """\
id: short
trigger: {type: manual}
concurrency: {max: 8, on_overlap: queue, max_queue: 24}
analyze:
  analysis_steps:
    - {name: wait, skill_id: slow, params: {seconds: 0.3}}
decide: {decision_tree: [], fallback_action: log_only}
"""

QUICK = """\
id: quick
trigger: {type: manual}
concurrency: {max: 16, on_overlap: queue, max_queue: 24}
decide: {decision_tree: [], fallback_action: log_only}
"""


def _loop(tmp_path: Path, source: str = STEADY) -> Loop:
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    path = tmp_path / "steady.yaml"
    path.write_text(textwrap.dedent(source))
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


def _fail_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first job fails (its worker records its end), and so does the record of its end."""
    STEPS["engine"](monkeypatch)
    monkeypatch.setattr(queue, "finish_job", _once(queue.finish_job, "finish", 2))


STEPS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "claim": lambda m: m.setattr(queue, "claim_to_start", _once(queue.claim_to_start, "claim", 2)),
    "envelope": lambda m: m.setattr(
        JobEnvelope, "from_row", _once(JobEnvelope.from_row, "envelope")
    ),
    "take": lambda m: m.setattr(
        executions, "taking_leased_envelope", _once(executions.taking_leased_envelope, "take", 2)
    ),
    "engine": lambda m: m.setattr(Engine, "prelude", staticmethod(_once(Engine.prelude, "engine"))),
    "resume": lambda m: m.setattr(
        "loopengine.daemon._workers.resume", _async_once(resume, "resume")
    ),
    "commit": lambda m: m.setattr(
        effects, "finishing_job", _once(effects.finishing_job, "commit", 2)
    ),
    "finish": _fail_its_end,
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


def _workers(store: Store, loop: Loop, log: io.StringIO, base: Path, **options: Any) -> Workers:
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    engine = Engine(Services(registry, store, base=base))
    log_to = DaemonLog(log, as_json=True)
    return Workers(engine, served(loop), lambda _file: loop, log_to, owner="here:1:w", **options)


async def _enqueue(store: Store, loop: Loop, *keys: str) -> None:
    for key in keys:
        firing = Firing(loop, {"type": "manual"}, key)
        now = time.time()
        await store.write(intake.enqueue, firing.arrival(now), now)


def _run(tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], str]:
    loop = _loop(tmp_path)
    log = io.StringIO()

    async def main() -> list[Any]:
        async with memory_store() as store:
            workers = _workers(store, loop, log, tmp_path, count=1, lease_s=0.6, poll_s=0.01)
            if step == "resume":
                await _interrupted_execution(store, workers.engine, loop)
            STEPS[step](monkeypatch)
            return await _drained(store, workers, loop, "first", "second")

    return anyio.run(main), log.getvalue()


async def _drained(store: Store, workers: Workers, loop: Loop, *keys: str) -> list[Any]:
    """The jobs of ``loop`` queued under ``keys`` and their executions (``_jobs_and_executions``),
    once ``workers`` left none queued or running."""
    await _enqueue(store, loop, *keys)
    async with anyio.create_task_group() as group:
        group.start_soon(workers.run)
        await _until(store, lambda d: d == {"queued": 0, "running": 0})
        group.cancel_scope.cancel()
    return list(await store.read(_jobs_and_executions))


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

    def left_part_way(connection: Any) -> None:
        connection.exec_driver_sql(
            "UPDATE jobs SET status = 'queued', owner = NULL, lease_until = NULL, outcome = NULL,"
            " execution_id = NULL, finished_at = NULL WHERE id = ?",
            (lease.job_id,),
        )
        connection.exec_driver_sql(
            "UPDATE executions SET status = 'interrupted', outcome = 'interrupted' WHERE id = ?",
            (done.execution_id,),
        )

    await store.write(left_part_way)


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


@pytest.mark.parametrize("step", ["envelope", "take", "engine", "resume", "commit"])
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


@pytest.mark.anyio
async def test_jobs_claimed_together_all_start_at_once_on_the_free_workers(tmp_path: Path) -> None:
    loop = _loop(tmp_path, LONG)
    async with memory_store() as store:
        workers = _workers(store, loop, io.StringIO(), tmp_path, count=4, lease_s=30, poll_s=600)
        async with anyio.create_task_group() as group:
            group.start_soon(workers.run)
            with anyio.fail_after(DEADLINE_S):
                while len(workers._resting.waiting) < 4:
                    await anyio.sleep(0.02)
            await _enqueue(store, loop, "first", "second", "third")
            workers.wake()
            with anyio.fail_after(DEADLINE_S):
                while len(workers.running) < 3:
                    await anyio.sleep(0.02)
            group.cancel_scope.cancel()


@asynccontextmanager
async def _claimed_unstarted(tmp_path: Path, lease_s: float) -> AsyncIterator[tuple[Workers, str]]:
    """One worker (leases of 0.6 s) and the id of a job claimed for it under a lease of
    ``lease_s``, waiting in ``_claimed`` to start."""
    loop = _loop(tmp_path)
    async with memory_store() as store:
        workers = _workers(store, loop, io.StringIO(), tmp_path, count=1, lease_s=0.6, poll_s=600)
        await _enqueue(store, loop, "first")
        claimed = await store.write(
            queue.claim_next, {loop.id: 1}, workers.owner, time.time, lease_s
        )
        assert claimed is not None
        workers._claimed.append((*claimed, None))
        yield workers, claimed[1].job_id


@pytest.mark.anyio
async def test_the_heartbeat_renews_the_lease_of_a_job_claimed_and_not_yet_started(
    tmp_path: Path,
) -> None:
    async with _claimed_unstarted(tmp_path, 0.6) as (workers, job_id):
        claimed_until = await workers.store.read(_lease_until, job_id)
        async with anyio.create_task_group() as group:
            group.start_soon(workers._heartbeat)
            with anyio.fail_after(DEADLINE_S):
                while await workers.store.read(_lease_until, job_id) <= claimed_until:
                    await anyio.sleep(0.02)
            group.cancel_scope.cancel()


def _lease_until(connection: Any, job_id: str) -> float:
    query = "SELECT lease_until FROM jobs WHERE id = ?"
    return float(connection.exec_driver_sql(query, (job_id,)).scalar_one())


@pytest.mark.anyio
async def test_a_job_claimed_whose_lease_passed_to_another_daemon_before_it_started_is_dropped(
    tmp_path: Path,
) -> None:
    async with _claimed_unstarted(tmp_path, -1) as (workers, _job_id):
        limits = workers.limits()
        taken = await workers.store.write(queue.claim_next, limits, "there:1:w", time.time, 30)
        assert taken is not None
        await workers._renew()
        assert not workers._claimed


@pytest.mark.anyio
async def test_a_job_claimed_whose_cancellation_was_requested_before_it_started_ends_cancelled(
    tmp_path: Path,
) -> None:
    async with _claimed_unstarted(tmp_path, 30) as (workers, job_id):
        cancel = "UPDATE jobs SET cancel_requested = 1 WHERE id = ?"
        await workers.store.write(lambda c: c.exec_driver_sql(cancel, (job_id,)))
        await workers._renew()
        ended = "SELECT status, outcome FROM jobs WHERE id = ?"
        row = await workers.store.read(lambda c: tuple(c.exec_driver_sql(ended, (job_id,)).one()))
    assert (len(workers._claimed), row) == (0, (queue.DONE, "cancelled"))


async def _drain_watching(
    tmp_path: Path, source: str, jobs: int, seen: Callable[[Workers, dict[str, int]], bool]
) -> tuple[int, dict[str, int]]:
    """Two workers start on ``jobs`` jobs of the loop ``source``, until ``seen`` holds of them
    and the queue's depth (a failure after the deadline): the jobs claimed ahead then, and the
    depth."""
    loop = _loop(tmp_path, source)
    async with memory_store() as store:
        workers = _workers(store, loop, io.StringIO(), tmp_path, count=2, lease_s=30, poll_s=600)
        await _enqueue(store, loop, *(f"job{index}" for index in range(jobs)))
        async with anyio.create_task_group() as group:
            group.start_soon(workers.run)
            depth = await _until(store, lambda depth: seen(workers, depth))
            group.cancel_scope.cancel()
        return len(workers._claimed), depth


@pytest.mark.anyio
async def test_a_daemon_whose_executions_are_short_claims_jobs_ahead_of_its_workers(
    tmp_path: Path,
) -> None:
    """Two workers on jobs of 0.3 s: more jobs are claimed, leased to the daemon and waiting
    to start."""

    def ahead(workers: Workers, depth: dict[str, int]) -> bool:
        waiting = len(workers._claimed) > 0 and depth["running"] == 2 + len(workers._claimed)
        return len(workers.running) == 2 and waiting

    await _drain_watching(tmp_path, SHORT, 12, ahead)


@pytest.mark.anyio
async def test_a_daemon_claims_no_job_ahead_until_its_executions_are_known_short(
    tmp_path: Path,
) -> None:
    """Two workers on their first, long, jobs: the other jobs stay queued for any daemon."""

    def started(workers: Workers, depth: dict[str, int]) -> bool:
        return len(workers.running) == 2 and not workers._claiming

    assert await _drain_watching(tmp_path, LONG, 5, started) == (0, {"queued": 3, "running": 2})


@pytest.mark.anyio
async def test_jobs_claimed_ahead_of_executions_grown_long_are_given_back_their_claim_uncounted(
    tmp_path: Path,
) -> None:
    """Two workers thought fast claim ``AHEAD`` times two jobs ahead; once their executions
    outlast ``AHEAD_S`` the heartbeat queues those again for any daemon, as never claimed."""
    loop = _loop(tmp_path, LONG.replace("max: 4", "max: 16"))
    ahead = 2 * working.AHEAD
    async with memory_store() as store:
        workers = _workers(store, loop, io.StringIO(), tmp_path, count=2, lease_s=1.5, poll_s=600)
        workers._pace = 0.1
        await _enqueue(store, loop, *(f"job{index}" for index in range(2 + ahead + 1)))
        async with anyio.create_task_group() as group:
            group.start_soon(workers.run)
            await _until(store, lambda depth: depth.get("running") == 2 + ahead)
            depth = await _until(store, lambda depth: depth.get("queued") == ahead + 1)
            group.cancel_scope.cancel()
        attempts = "SELECT attempts FROM jobs WHERE status = 'queued'"
        queued = await store.read(lambda c: list(c.exec_driver_sql(attempts).scalars()))
    given_back = ({"queued": ahead + 1, "running": 2}, 0, [0] * (ahead + 1))
    assert (depth, len(workers._claimed), queued) == given_back


def _counting_claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The jobs each claim takes, from now on."""
    taken: list[int] = []
    original = queue.claim_to_start

    def counted(*args: Any) -> list[Any]:
        claimed = original(*args)
        taken.append(len(claimed))
        return claimed

    monkeypatch.setattr(queue, "claim_to_start", counted)
    return taken


def test_a_daemon_draining_a_backlog_claims_a_batch_as_its_workers_worth_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four workers drain 24 short jobs (however long a loaded machine makes the first): the
    first claim takes the workers' worth, each after it but the last ``AHEAD`` times as many
    or more (the jobs claimed ahead), where one per job ended took a job each."""
    monkeypatch.setattr(working, "AHEAD_S", 3600.0)
    loop = _loop(tmp_path, QUICK)
    keys = [f"job{index}" for index in range(24)]

    async def main() -> list[int]:
        async with memory_store() as store:
            workers = _workers(
                store, loop, io.StringIO(), tmp_path, count=4, lease_s=30, poll_s=600
            )
            await _enqueue(store, loop, *keys)
            taken = _counting_claims(monkeypatch)
            async with anyio.create_task_group() as group:
                group.start_soon(workers.run)
                await _until(store, lambda d: d == {"queued": 0, "running": 0})
                group.cancel_scope.cancel()
            return taken

    taken = [count for count in anyio.run(main) if count]
    assert sum(taken) == len(keys)
    assert taken[0] == 4
    assert min(taken[1:-1]) >= 4 * working.AHEAD


def test_the_fence_before_act_asks_the_store_nothing_while_the_lease_is_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = _loop(tmp_path, QUICK)
    checked: list[str] = []
    check = queue.check_lease

    def counted(connection: Any, lease: queue.Lease) -> None:
        checked.append(lease.job_id)
        check(connection, lease)

    monkeypatch.setattr(queue, "check_lease", counted)

    async def main() -> list[Any]:
        async with memory_store() as store:
            workers = _workers(
                store, loop, io.StringIO(), tmp_path, count=1, lease_s=30.0, poll_s=0.01
            )
            return await _drained(store, workers, loop, "first", "second")

    ended = anyio.run(main)
    assert [row[1:3] for row in ended] == [("done", "completed")] * 2
    assert checked == []


def _operations(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the operations handed to ``store`` from now on, in order."""
    handed: list[str] = []
    for method in ("submit", "lead", "read"):
        original = getattr(store, method)

        def recorded(operation: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            handed.append(getattr(operation, "__name__", repr(operation)))
            return _original(operation, *args, **kwargs)

        monkeypatch.setattr(store, method, recorded)
    return handed


def test_a_job_starts_from_what_its_claim_read_and_is_written_in_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its claim read its loop's starting point; its start and its phases, which call no skill,
    wait for its end's commit, which takes its envelope and inserts its execution."""
    loop = _loop(tmp_path, QUICK)

    async def main() -> tuple[list[str], list[Any]]:
        async with memory_store() as store:
            workers = _workers(store, loop, io.StringIO(), tmp_path, count=1, lease_s=30, poll_s=1)
            handed = _operations(store, monkeypatch)
            rows = await _drained(store, workers, loop, "only")
        return handed, rows

    handed, rows = anyio.run(main)
    ignored = {"claim_to_start", "enqueue", "queue_depth", "renew_leases", "_jobs_and_executions"}
    assert [name for name in handed if name not in ignored] == ["write_commit"]
    assert rows == [("only", "done", "completed", None, "finished", "completed")]


LEARNING = QUICK + "learn:\n  feedback_sources:\n    - {type: outcome, name: done, weight: 1}\n"


@pytest.mark.parametrize(
    "source",
    [
        LEARNING,
        LEARNING + "store:\n  artifacts: [{type: outcome, name: summary, storage: sqlite}]\n",
    ],
    ids=["learned-in-the-last-commit", "learned-in-a-commit-before"],
)
def test_a_job_claimed_ahead_starts_from_what_the_executions_before_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """One worker runs the jobs one after the other: each learns from all those before it,
    although the claim read the loop's state before they ended, and none reads it again (its
    learned state committed with its end, or before it: the store phase yields)."""
    loop = _loop(tmp_path, source)

    async def main() -> tuple[int | None, list[str]]:
        async with memory_store() as store:
            workers = _workers(store, loop, io.StringIO(), tmp_path, count=1, lease_s=30, poll_s=1)
            handed = _operations(store, monkeypatch)
            async with anyio.create_task_group() as group:
                group.start_soon(workers.run)
                for keys in (["first"], [f"next{index}" for index in range(7)]):
                    await _enqueue(store, loop, *keys)
                    await _until(store, lambda depth: depth == {"queued": 0, "running": 0})
                group.cancel_scope.cancel()
            state = await store.read(learning.get_state, loop.id)
        return (state.samples if state is not None else None), handed

    samples, handed = anyio.run(main)
    assert (samples, handed.count("starting_point")) == (8, 0)


def test_a_job_s_execution_takes_the_job_s_id(tmp_path: Path) -> None:
    """Its skills' idempotency keys start with it: run again after its daemon died before its
    first commit, they are the same."""
    loop = _loop(tmp_path, QUICK)

    async def main() -> list[Any]:
        async with memory_store() as store:
            workers = _workers(store, loop, io.StringIO(), tmp_path, count=1, lease_s=30, poll_s=1)
            await _drained(store, workers, loop, "only")
            return await store.read(_ids)

    [(job_id, execution_id)] = anyio.run(main)
    assert execution_id == job_id


def _ids(connection: Any) -> list[Any]:
    """Each job's id and its execution's, from the executions table."""
    return list(connection.exec_driver_sql("SELECT job_id, id FROM executions"))

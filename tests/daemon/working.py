"""A daemon's worker in process, run until one queued job is done."""

from __future__ import annotations

import io
import time
from pathlib import Path

import anyio

from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog
from loopengine.daemon._loops import ServedLoops
from loopengine.daemon._workers import Workers
from loopengine.engine import Engine, Services
from loopengine.store import Store, queue

DEADLINE_S = 60.0


def served(loop: Loop) -> ServedLoops:
    """The loops a daemon serves: ``loop`` alone, built from its file."""
    loops = ServedLoops(LoopLoader(Env(builtin_registry(), frozenset(Config().storage))))
    loops.put(loop, Path(loop.file).read_text())
    return loops


async def work_off(store: Store, loop: Loop, job_id: str, base: Path) -> queue.Job:
    """Run ``loop``'s jobs with one worker until job ``job_id`` is done; that job as it ended
    (``AssertionError`` when it is not done within ``DEADLINE_S``)."""
    engine = Engine(Services(builtin_registry(), store, base=base))
    log = DaemonLog(io.StringIO(), as_json=True)
    workers = Workers(
        engine,
        served(loop),
        lambda _f: loop,
        log,
        owner="here:1:w",
        count=1,
        lease_s=30,
        poll_s=0.01,
    )
    deadline = time.monotonic() + DEADLINE_S
    async with anyio.create_task_group() as group:
        group.start_soon(workers.run)
        while (job := await store.read(queue.get_job, job_id)) is None or job.status != queue.DONE:
            assert time.monotonic() < deadline, f"job {job_id} is not done: {job}"
            await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    return job

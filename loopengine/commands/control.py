"""``trigger``, ``pause``/``unpause``: what users tell a daemon through the store, whether or
not one runs (nothing is lost while it is down)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from loopengine.app import Workspace, open_runtime
from loopengine.commands._console import Console
from loopengine.commands._inputs import parse_inputs
from loopengine.commands._report import show_record
from loopengine.contract import Loop, LoopLoader, Outcome, find_loop_files
from loopengine.errors import ContractError
from loopengine.store import Store, executions, intake, new_id, queue

__all__ = ["find_loop", "run_pause", "run_trigger"]

_WAIT_POLL_S = 0.2


def _folder_loops(workspace: Workspace, loader: LoopLoader) -> dict[str, Loop]:
    """The valid loops of the daemon's folder (``daemon.loops``), by id."""
    folder = workspace.base / workspace.config.daemon.loops
    found: dict[str, Loop] = {}
    for path in find_loop_files([folder]) if folder.is_dir() else []:
        report = loader.load_file(path, folder)
        if report.loop is not None and report.ok:
            found.setdefault(report.loop.id, report.loop)
    return found


def find_loop(workspace: Workspace, loader: LoopLoader, name: str) -> tuple[Loop, bool]:
    """The loop ``name`` names (a file, else a loop id in the daemon's folder), and whether the
    daemon's folder holds it (a daemon runs only the loops of its folder)."""
    folder_loops = _folder_loops(workspace, loader)
    if Path(name).is_file():
        loop = loader.load_file(Path(name)).valid()
        return loop, loop.id in folder_loops
    if name in folder_loops:
        return folder_loops[name], True
    folder = workspace.base / workspace.config.daemon.loops
    listed = ", ".join(sorted(folder_loops)) or "none"
    raise ContractError(f"no loop '{name}' in {folder} (loops there: {listed}); give its file")


async def _alive(store: Store, lease_s: float) -> bool:
    return bool(await store.read(queue.active_daemons, time.time() - lease_s))


async def run_trigger(
    console: Console,
    name: str,
    pairs: list[str],
    wait: bool,
    config: Path | None,
    as_json: bool,
    dry_run: bool = False,
) -> int:
    from loopengine.app import Firing

    async with open_runtime(config) as runtime:
        loop, served = find_loop(runtime.workspace, runtime.loader, name)
        inputs = parse_inputs(pairs, loop)
        key, constraints = f"manual:{new_id()}", {"dry_run": True} if dry_run else None
        firing = Firing(loop, {"type": "manual", "id": "cli"}, key, inputs, constraints=constraints)
        now = time.time()
        [taken] = await runtime.store.write(intake.enqueue_all, [firing.arrival(now)], now)
        lease_s = runtime.workspace.config.daemon.lease_s
        if taken.status != queue.QUEUED:
            raise ContractError(f"loop '{loop.id}' did not queue the job: {taken.reason}")
        if not served:
            folder = runtime.workspace.base / runtime.workspace.config.daemon.loops
            console.problem(
                f"note: loop '{loop.id}' is not in {folder}: the job waits for a daemon whose "
                "folder holds it"
            )
        elif not await _alive(runtime.store, lease_s):
            console.problem(
                "note: no daemon is running on this store: the job waits in the queue until "
                "`loopengine daemon` starts"
            )
        if not wait:
            if as_json:
                console.json({"job_id": taken.job_id, "loop_id": loop.id, "status": "queued"})
            else:
                console.print(f"queued job {taken.job_id} for {loop.id}")
            return 0
        return await _wait_for(console, runtime.store, str(taken.job_id), as_json)


async def _wait_for(console: Console, store: Store, job_id: str, as_json: bool) -> int:
    """Wait for the job's outcome, then print its execution as ``run`` does."""
    while True:
        job = await store.read(queue.get_job, job_id)
        if job is not None and job.status in (queue.DONE, queue.SKIPPED):
            break
        await anyio.sleep(_WAIT_POLL_S)
    record = None
    if job.execution_id is not None:
        record = await store.read(executions.read_record, job.execution_id)
    if record is None:
        raise ContractError(f"job {job_id} ended without an execution: {job.reason}")
    show_record(console, record, as_json)
    return 0 if Outcome(str(job.outcome)).succeeded else 1


async def run_pause(
    console: Console, loop_id: str, pause: bool, config: Path | None, as_json: bool
) -> int:
    now = time.time()
    async with open_runtime(config, create=False) as runtime:
        if pause:
            changed = await runtime.store.write(queue.pause, loop_id, now)
        else:
            changed = await runtime.store.write(queue.unpause, loop_id)
    state = "paused" if pause else "active"
    if as_json:
        console.json({"loop_id": loop_id, "state": state, "changed": changed})
    elif changed:
        console.print(f"{loop_id} is {state}")
    else:
        console.print(f"{loop_id} was already {state}")
    return 0

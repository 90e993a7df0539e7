"""``trigger``, ``pause``/``unpause``: what users tell a daemon through the store, whether or
not one runs (nothing is lost while it is down)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import anyio

from loopengine.app import (
    Workspace,
    daemons_alive,
    execution,
    finished_job,
    open_runtime,
    pause,
    perform,
    trigger,
)
from loopengine.commands._console import Console
from loopengine.commands._inputs import parse_inputs
from loopengine.commands._report import show_record
from loopengine.contract import Loop, LoopLoader, Outcome, find_loop_files
from loopengine.errors import ContractError
from loopengine.store import Store

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


async def run_trigger(
    console: Console,
    name: str,
    pairs: list[str],
    wait: bool,
    config: Path | None,
    as_json: bool,
    dry_run: bool = False,
) -> int:
    async with open_runtime(config) as runtime:
        loop, served = find_loop(runtime.workspace, runtime.loader, name)
        inputs = parse_inputs(pairs, loop)
        queued = await perform(runtime.store, trigger(loop, inputs, "cli", dry_run=dry_run))
        lease_s = runtime.workspace.config.daemon.lease_s
        if not served:
            folder = runtime.workspace.base / runtime.workspace.config.daemon.loops
            console.problem(
                f"note: loop '{loop.id}' is not in {folder}: the job waits for a daemon whose "
                "folder holds it"
            )
        elif not await perform(runtime.store, daemons_alive(lease_s)):
            console.problem(
                "note: no daemon is running on this store: the job waits in the queue until "
                "`loopengine daemon` starts"
            )
        if not wait:
            if as_json:
                console.json(asdict(queued))
            else:
                console.print(f"queued job {queued.job_id} for {loop.id}")
            return 0
        return await _wait_for(console, runtime.store, queued.job_id, as_json)


async def _wait_for(console: Console, store: Store, job_id: str, as_json: bool) -> int:
    """Wait for the job's outcome, then print its execution as ``run`` does."""
    while (job := await perform(store, finished_job(job_id))) is None:
        await anyio.sleep(_WAIT_POLL_S)
    if job.execution_id is None:
        raise ContractError(f"job {job_id} ended without an execution: {job.reason}")
    show_record(console, await perform(store, execution(job.execution_id)), as_json)
    return 0 if Outcome(str(job.outcome)).succeeded else 1


async def run_pause(
    console: Console, loop_id: str, paused: bool, config: Path | None, as_json: bool
) -> int:
    async with open_runtime(config, create=False) as runtime:
        done = await perform(runtime.store, pause(loop_id, paused))
    if as_json:
        console.json(asdict(done))
    elif done.changed:
        console.print(f"{loop_id} is {done.state}")
    else:
        console.print(f"{loop_id} was already {done.state}")
    return 0

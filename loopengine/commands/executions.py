"""``approve``, ``reject``, ``resume``: executions waiting for a person or cut short."""

from __future__ import annotations

from pathlib import Path

from loopengine.app import Runtime, open_runtime
from loopengine.commands._console import Console
from loopengine.commands._progress import LivePhases
from loopengine.commands._report import MIN_PREFIX, NAMED, execution_named, show_record
from loopengine.engine import ExecutionDone, answer_approval, resume
from loopengine.store import executions

__all__ = ["run_answer", "run_resume"]


async def _named(runtime: Runtime, given: str) -> str:
    return execution_named(
        given, await runtime.store.read(executions.ids_named, given, MIN_PREFIX, NAMED)
    )


async def _show(runtime: Runtime, live: LivePhases, execution_id: str, as_json: bool) -> None:
    record = await runtime.store.read(executions.read_record, execution_id)
    assert record is not None
    live.finish()
    show_record(live.console, record, as_json, phases=not live.live)


def _code(done: ExecutionDone) -> int:
    return 0 if done.outcome.succeeded else 1


async def run_answer(
    console: Console,
    execution_id: str,
    approve: bool,
    note: str | None,
    config: Path | None,
    as_json: bool,
) -> int:
    live = LivePhases(console, as_json)
    async with open_runtime(config, live, live.progress, create=False) as runtime:
        execution_id = await _named(runtime, execution_id)
        done = await answer_approval(runtime.engine, runtime.load_loop, execution_id, approve, note)
        await _show(runtime, live, execution_id, as_json)
    return _code(done) if approve else 0


async def run_resume(
    console: Console, execution_id: str, config: Path | None, as_json: bool
) -> int:
    live = LivePhases(console, as_json)
    async with open_runtime(config, live, live.progress, create=False) as runtime:
        execution_id = await _named(runtime, execution_id)
        done = await resume(runtime.engine, runtime.load_loop, execution_id)
        await _show(runtime, live, execution_id, as_json)
    return _code(done)

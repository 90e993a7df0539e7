"""``history``, ``show``, ``approve``, ``reject``, ``resume``: past and waiting executions."""

from __future__ import annotations

from pathlib import Path

from loopengine.commands._console import Console
from loopengine.commands.run import SUCCESS, print_execution
from loopengine.engine import ExecutionDone, answer_approval, history_view, read_execution, resume
from loopengine.errors import LoopEngineError
from loopengine.runtime import Runtime, open_runtime
from loopengine.store import executions

__all__ = ["run_answer", "run_history", "run_resume", "run_show"]


async def run_history(
    console: Console,
    loop_id: str | None,
    limit: int,
    outcome: str | None,
    config: Path | None,
    as_json: bool,
) -> int:
    async with open_runtime(config) as runtime:
        rows = await runtime.store.read(
            lambda c: executions.list_executions(c, loop_id=loop_id, outcome=outcome, limit=limit)
        )
    views = [history_view(row) for row in rows]
    if as_json:
        console.json({"executions": views})
        return 0
    if not views:
        console.print("No executions yet: start one with `loopengine run LOOP.yaml`.")
        return 0
    table = [("execution", "loop", "outcome", "started", "ms")]
    for view in views:
        duration = "" if view["duration_ms"] is None else f"{view['duration_ms']:.0f}"
        table.append(
            (
                view["execution_id"],
                view["loop_id"],
                str(view["outcome"] or view["status"]),
                str(view["started_at"]),
                duration,
            )
        )
    console.table(table, (("dim",), ("bold",), (), (), ()))
    return 0


async def _show(
    console: Console, runtime: Runtime, execution_id: str, as_json: bool
) -> dict[str, object]:
    view = await runtime.store.read(lambda c: read_execution(c, execution_id))
    if view is None:
        raise LoopEngineError(f"no execution {execution_id!r} (see `loopengine history`)")
    if as_json:
        console.json(view)
    else:
        print_execution(console, view)
    return view


async def run_show(console: Console, execution_id: str, config: Path | None, as_json: bool) -> int:
    async with open_runtime(config) as runtime:
        await _show(console, runtime, execution_id, as_json)
    return 0


def _code(done: ExecutionDone) -> int:
    return 0 if done.outcome in SUCCESS else 1


async def run_answer(
    console: Console,
    execution_id: str,
    approve: bool,
    note: str | None,
    config: Path | None,
    as_json: bool,
) -> int:
    async with open_runtime(config) as runtime:
        done = await answer_approval(runtime.engine, runtime.load_loop, execution_id, approve, note)
        await _show(console, runtime, execution_id, as_json)
    return _code(done) if approve else 0


async def run_resume(
    console: Console, execution_id: str, config: Path | None, as_json: bool
) -> int:
    async with open_runtime(config) as runtime:
        done = await resume(runtime.engine, runtime.load_loop, execution_id)
        await _show(console, runtime, execution_id, as_json)
    return _code(done)

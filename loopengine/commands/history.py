"""``history`` and ``show``: past executions, read without writing anything."""

from __future__ import annotations

from pathlib import Path

from loopengine.commands._console import Console
from loopengine.commands._report import print_execution
from loopengine.errors import LoopEngineError
from loopengine.reader import open_reader
from loopengine.store import executions

__all__ = ["run_history", "run_show"]


async def run_history(
    console: Console,
    loop_id: str | None,
    limit: int,
    outcome: str | None,
    config: Path | None,
    as_json: bool,
) -> int:
    async with open_reader(config) as store:
        rows = (
            []
            if store is None
            else await store.read(
                lambda c: executions.list_executions(
                    c, loop_id=loop_id, outcome=outcome, limit=limit
                )
            )
        )
    views = [row.summary() for row in rows]
    if as_json:
        console.json({"executions": views})
        return 0
    if not views:
        console.print("No executions yet: start one with `loopengine run LOOP.yaml`.")
        return 0
    table = [("execution", "loop", "trigger", "outcome", "started", "ms")]
    for view in views:
        duration = "" if view["duration_ms"] is None else f"{view['duration_ms']:.0f}"
        table.append(
            (
                view["execution_id"],
                view["loop_id"],
                view["trigger_type"],
                str(view["outcome"] or view["status"]),
                str(view["started_at"]),
                duration,
            )
        )
    console.table(table, (("dim",), ("bold",), ("dim",), (), (), ()))
    return 0


async def run_show(console: Console, execution_id: str, config: Path | None, as_json: bool) -> int:
    async with open_reader(config) as store:
        record = (
            None
            if store is None
            else await store.read(lambda c: executions.read_record(c, execution_id))
        )
    if record is None:
        raise LoopEngineError(f"no execution {execution_id!r} (see `loopengine history`)")
    view = record.view()
    if as_json:
        console.json(view)
    else:
        print_execution(console, view)
    return 0

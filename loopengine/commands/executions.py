"""``approve``, ``reject``, ``resume``: executions waiting for a person or cut short."""

from __future__ import annotations

from pathlib import Path

from loopengine.app import answer, named, open_runtime, perform, resume
from loopengine.commands._console import Console
from loopengine.commands._progress import LivePhases
from loopengine.commands._report import show_record
from loopengine.contract import Outcome
from loopengine.store import ExecutionRecord

__all__ = ["run_answer", "run_resume"]


def _shown(live: LivePhases, record: ExecutionRecord, as_json: bool) -> int:
    """Print ``record`` (without the phases live lines have just shown); the exit code of its
    outcome."""
    live.finish()
    show_record(live.console, record, as_json, phases=not live.live)
    outcome = record.execution.outcome
    return 0 if outcome is not None and Outcome(outcome).succeeded else 1


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
        execution_id = await perform(runtime.store, named(execution_id))
        code = _shown(live, await answer(runtime, execution_id, approve, note), as_json)
    return code if approve else 0


async def run_resume(
    console: Console, execution_id: str, config: Path | None, as_json: bool
) -> int:
    live = LivePhases(console, as_json)
    async with open_runtime(config, live, live.progress, create=False) as runtime:
        execution_id = await perform(runtime.store, named(execution_id))
        return _shown(live, await resume(runtime, execution_id), as_json)

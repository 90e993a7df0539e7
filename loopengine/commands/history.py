"""``history``, ``show`` and ``logs``: past executions, read without writing anything."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from loopengine._suggestions import did_you_mean
from loopengine.app import (
    MAX_LISTED,
    execution,
    execution_log,
    history,
    named,
    open_reader,
    read_now,
)
from loopengine.commands._console import Console
from loopengine.commands._report import show_record
from loopengine.errors import ContractError
from loopengine.store import iso

if TYPE_CHECKING:
    from loopengine.contract import Outcome
    from loopengine.store.logs import LogLine

__all__ = ["FOLLOW_POLL_S", "run_history", "run_logs", "run_show"]

FOLLOW_POLL_S = 0.5
"""How often ``logs --follow`` reads what a running execution logged since."""
_LEVEL_STYLES = {"WARNING": ("yellow",), "ERROR": ("red",), "CRITICAL": ("red", "bold")}


def _filters(limit: int, outcome: str | None) -> Outcome | None:
    """The outcome ``--outcome`` names; refuses a filter that could only show nothing, or
    everything."""
    from loopengine.contract import Outcome

    if not 1 <= limit <= MAX_LISTED:
        raise ContractError(f"--limit {limit}: write a whole number from 1 to {MAX_LISTED}")
    known = [o.value for o in Outcome]
    if outcome is not None and outcome not in known:
        raise ContractError(
            f"--outcome {outcome}: not an outcome{did_you_mean(outcome, known)} "
            f"(outcomes: {', '.join(known)})"
        )
    return None if outcome is None else Outcome(outcome)


def run_history(
    console: Console,
    loop_id: str | None,
    limit: int,
    outcome: str | None,
    config: Path | None,
    as_json: bool,
) -> int:
    wanted = _filters(limit, outcome)
    with open_reader(config) as reader:
        page = read_now(reader, history(loop_id, wanted, limit))
    if as_json:
        console.json({"executions": [row.summary() for row in page.rows]})
        return 0
    if not page.rows:
        filters = [f"loop {loop_id}"] if loop_id else []
        filters += [f"outcome {outcome}"] if outcome else []
        if filters:
            console.print(f"No executions with {' and '.join(filters)}.")
        else:
            console.print("No executions yet: start one with `loopengine run LOOP.yaml`.")
        return 0
    table = [("execution", "loop", "trigger", "outcome", "started", "ms")]
    for row in page.rows:
        duration = "" if row.duration_ms is None else f"{row.duration_ms:.0f}"
        started = str(iso(row.started_at))
        table.append(
            (row.id, row.loop_id, row.trigger_type, row.outcome or row.status, started, duration)
        )
    console.table(table, (("dim",), ("bold",), ("dim",), (), (), ()))
    return 0


def run_show(console: Console, given: str, config: Path | None, as_json: bool) -> int:
    with open_reader(config) as reader:
        record = read_now(reader, execution(read_now(reader, named(given))))
    show_record(console, record, as_json)
    return 0


def _line(console: Console, line: LogLine) -> str:
    where = f"{line.phase}/{line.step}" if line.step else line.phase
    level = console.style(f"{line.level:<8}", *_LEVEL_STYLES.get(line.level, ("dim",)))
    return f"{console.style(str(iso(line.at)), 'dim')} {level} {where}  {line.message}"


def run_logs(
    console: Console,
    given: str,
    after: int,
    limit: int,
    follow: bool,
    config: Path | None,
    as_json: bool,
) -> int:
    """Print what the execution's skills logged after the cursor ``after``; with ``follow``,
    keep printing until the execution is no longer running (a JSON line per page)."""
    with open_reader(config) as reader:
        execution_id = read_now(reader, named(given))
        while True:
            page = read_now(reader, execution_log(execution_id, after, limit))
            if as_json:
                console.json(page.view(execution_id))
            for line in () if as_json else page.lines:
                console.print(_line(console, line))
            after = page.after
            if not follow or (page.status != "running" and len(page.lines) < limit):
                break
            if len(page.lines) < limit:
                time.sleep(FOLLOW_POLL_S)
    if not as_json and after == 0:
        console.print("Nothing logged: a skill logs with ctx.logger, INFO and above.")
    return 0

"""``loopengine plan LOOP``: the exact fire instants of a loop's cron triggers, local and UTC,
with each daylight-saving decision and the catch-up policy spelled out. Read-only: nothing is
opened but the loop file."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from loopengine.commands._console import Console
from loopengine.errors import ContractError

__all__ = ["DEFAULT_COUNT", "MAX_COUNT", "run_plan"]

DEFAULT_COUNT = 10
MAX_COUNT = 10_000


def _instant(text: str | None, zone: str, default: float | None) -> float | None:
    """An ISO time as epoch seconds; without an offset it is read in the trigger's zone."""
    if text is None:
        return default
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ContractError(
            f"time {text!r}: write ISO 8601, e.g. 2027-03-28T00:00 or 2027-03-28T00:00+01:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(zone))
    return moment.timestamp()


def _catchup_text(config: Any) -> str:
    window = f"{config.catchup_window:g} s" if config.catchup_window else "one period"
    policy = str(config.catchup)
    if policy == "skip":
        what = "missed fires are recorded as missed, none runs"
    elif policy == "latest":
        what = "the latest missed fire runs, older ones are recorded as coalesced"
    else:
        what = f"up to {config.max_catchup} missed fires run, older ones are recorded as coalesced"
    return (
        f"catchup {policy}: after downtime {what}; fires older than {window} are recorded as missed"
    )


def _trigger_plan(
    trigger_id: str, config: Any, start: str | None, end: str | None, count: int | None
) -> dict[str, Any]:
    from loopengine.triggers import CronSchedule

    schedule = CronSchedule.parse(config.expression, config.timezone)
    begin = _instant(start, config.timezone, time.time())
    assert begin is not None
    finish = _instant(end, config.timezone, None)
    limit = count if count is not None else (MAX_COUNT if finish is not None else DEFAULT_COUNT)
    if not 1 <= limit <= MAX_COUNT:
        raise ContractError(f"--count {limit}: write a whole number from 1 to {MAX_COUNT}")
    if finish is not None:
        fires = schedule.fires(begin, finish, limit)
    else:
        fires, after = [], begin
        while len(fires) < limit:
            fire = schedule.next_fire(after)
            fires.append(fire)
            after = fire.at
    return {
        "trigger_id": trigger_id,
        "expression": config.expression,
        "timezone": config.timezone,
        "dst": "fixed-time: a skipped local time fires once right after the gap, a repeated one "
        "once"
        if schedule.fixed_time
        else "sub-hourly: follows elapsed time (nothing in a gap, both passes of a repeated hour)",
        "catchup": _catchup_text(config),
        "jitter_s": config.jitter_s,
        "fires": [
            {
                "local": fire.local.isoformat(),
                "utc": datetime.fromtimestamp(fire.at, UTC).isoformat(),
                "note": fire.note,
            }
            for fire in fires
        ],
    }


async def run_plan(
    console: Console,
    name: str,
    start: str | None,
    end: str | None,
    count: int | None,
    config: Path | None,
    as_json: bool,
) -> int:
    from loopengine.app import load_workspace
    from loopengine.commands.control import find_loop
    from loopengine.contract import LoopLoader
    from loopengine.daemon import triggers_of

    workspace = load_workspace(config)
    loop, _ = find_loop(workspace, LoopLoader(workspace.env), name)
    plans = [
        _trigger_plan(trigger_id, trigger.config, start, end, count)
        for trigger_id, trigger in triggers_of(loop)
        if trigger.type == "cron"
    ]
    others = [
        f"{trigger.type}:{trigger_id}"
        for trigger_id, trigger in triggers_of(loop)
        if trigger.type != "cron"
    ]
    if as_json:
        console.json({"loop_id": loop.id, "cron": plans, "other_triggers": others})
        return 0
    if not plans:
        console.print(
            f"{loop.id} has no cron trigger ({', '.join(others) or 'no trigger'}): nothing to plan"
        )
        return 0
    for plan in plans:
        console.print(
            console.style(f"{loop.id} · cron:{plan['trigger_id']}", "bold")
            + f"  {plan['expression']}  ({plan['timezone']})"
        )
        console.print(console.style(f"  DST: {plan['dst']}", "dim"))
        console.print(console.style(f"  {plan['catchup']}", "dim"))
        rows = [("local", "UTC", "note")]
        rows += [(f["local"], f["utc"], f["note"] or "") for f in plan["fires"]]
        console.table(rows, ((), ("dim",), ("yellow",)))
    return 0

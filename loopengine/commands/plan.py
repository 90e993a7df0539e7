"""``loopengine plan LOOP``: the exact fire instants of a loop's cron triggers, local and UTC,
with each daylight-saving decision and the catch-up policy spelled out (``loop_plan``).
Read-only: nothing is opened but the loop file."""

from __future__ import annotations

from pathlib import Path

from loopengine.commands._console import Console

__all__ = ["run_plan"]


async def run_plan(
    console: Console,
    name: str,
    start: str | None,
    end: str | None,
    count: int | None,
    config: Path | None,
    as_json: bool,
) -> int:
    from loopengine.app import load_workspace, loop_plan
    from loopengine.commands.control import find_loop
    from loopengine.contract import LoopLoader

    workspace = load_workspace(config)
    loop, _ = find_loop(workspace, LoopLoader(workspace.env), name)
    planned = loop_plan(loop, start, end, count)
    if as_json:
        console.json(planned)
        return 0
    plans, others = planned["cron"], planned["other_triggers"]
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

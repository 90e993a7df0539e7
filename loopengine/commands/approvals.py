"""``approvals``: what waits for a person, oldest first, read without writing anything."""

from __future__ import annotations

from pathlib import Path

from loopengine.app import open_reader, read_now, waiting_approvals
from loopengine.commands._console import Console
from loopengine.commands._report import plan_lines
from loopengine.errors import ContractError
from loopengine.store import approvals

__all__ = ["run_approvals", "time_left"]


def time_left(seconds: float, overdue: bool) -> str:
    """How long until an approval escalates, to the minute (to the second under one)."""
    if overdue:
        return "overdue (the next command that runs loops escalates it)"
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h left"
    if hours:
        return f"{hours}h {minutes}m left"
    return f"{minutes}m left" if minutes else f"{secs}s left"


def run_approvals(console: Console, limit: int, config: Path | None, as_json: bool) -> int:
    if not 1 <= limit <= approvals.MAX_WAITING:
        raise ContractError(
            f"--limit {limit}: write a whole number from 1 to {approvals.MAX_WAITING}"
        )
    with open_reader(config) as reader:
        found = read_now(reader, waiting_approvals(limit))
    if as_json:
        console.json({"approvals": [gate.as_json() for gate in found]})
        return 0
    if not found:
        console.print("Nothing waits for approval.")
    for gate in found:
        left = time_left(gate.time_left_s, gate.overdue)
        console.print(
            f"{console.style(gate.loop_id, 'bold')}  {gate.execution_id}  "
            f"{gate.action}  {console.style(left, 'red' if gate.overdue else 'yellow')}"
        )
        decision = gate.decision or {}
        console.print(f"  decision: {decision.get('action')} ({decision.get('reason')})")
        for line in plan_lines(gate.plan or []):
            console.print(line)
    return 0

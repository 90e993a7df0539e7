"""How an execution record reads on a terminal (``run``, ``show``, ``approve``, ``resume``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopengine.commands._console import Console
from loopengine.commands._progress import logged_note
from loopengine.contract import Outcome
from loopengine.errors import NotResumable
from loopengine.store import ExecutionRecord, executions

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["MIN_PREFIX", "execution_named", "show_record"]

MIN_PREFIX = 4
"""Shortest prefix of an execution id a command accepts."""


def execution_named(connection: sa.Connection, given: str) -> str:
    """The execution id ``given`` names, whole or as a unique prefix (like git's short hashes),
    in the store behind ``connection``; ``NotResumable`` when none or several match, listing
    them."""
    if MIN_PREFIX <= len(given) < 32:
        found = executions.ids_starting_with(connection, given, 6)
        if len(found) == 1:
            return found[0]
        if found:
            shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
            raise NotResumable(f"{given!r} names several executions ({shown}): give more of it")
    if not executions.get_execution(connection, given):
        raise NotResumable(f"no execution {given!r} (see `loopengine history`)")
    return given


_SUCCEEDED = frozenset(outcome.value for outcome in Outcome if outcome.succeeded)
_ANSWERED = frozenset({Outcome.REJECTED.value, Outcome.ESCALATED.value})


def show_record(
    console: Console, record: ExecutionRecord, as_json: bool, *, phases: bool = True
) -> None:
    """An execution as ``show`` prints it: the full view with ``--json``, else the summary
    (without the phase table when live lines have just shown the phases)."""
    view = record.view()
    if as_json:
        console.json(view)
    else:
        _print_summary(console, view, phases=phases)


def _print_summary(console: Console, view: dict[str, Any], *, phases: bool = True) -> None:
    """The human summary of an execution record."""
    outcome = view["outcome"] or view["status"]
    good = outcome in _SUCCEEDED
    console.print(
        f"{console.style(view['loop_id'], 'bold')}  {view['execution_id']}  "
        + console.style(outcome, "green" if good else "red", "bold")
    )
    decision = view.get("decision")
    if decision:
        console.print(f"  decision: {decision.get('action')} ({decision.get('reason')})")
    if view.get("approval"):
        gate = view["approval"]
        when = (
            f"deadline {gate['deadline']}"
            if gate["status"] == "pending"
            else f"{gate['decided_at']}" + (f": {gate['note']}" if gate.get("note") else "")
        )
        console.print(f"  approval: {gate['action']} {gate['status']} ({when})")
    if view.get("error") and view["error"] != (view.get("approval") or {}).get("note"):
        if outcome in _ANSWERED:  # a person's note, or why it was escalated: not a failure
            console.print(f"  note: {view['error']}")
        else:
            console.print("  error: " + console.style(str(view["error"]), "red"))
    if phases:
        rows = [("phase", "ms", "ok", "outcome / note")]
        for phase in view["phases"]:
            skipped = phase["data"].get("skipped")
            note = skipped or phase["outcome"] or logged_note(phase["data"]) or ""
            if phase["errors"]:
                note = phase["errors"][0]
            ran = "–" if skipped else "yes" if phase["success"] else "no"
            rows.append((phase["phase"], f"{phase['duration_ms']:.1f}", ran, str(note)))
        console.table(rows, (("bold",), (), (), ()))
    for artifact in view.get("artifacts", ()):
        console.print(f"  artifact {artifact['name']}: {_near(artifact['location'])}")


def _near(location: str) -> str:
    """A local artifact path relative to the working directory when it lies under it."""
    path = Path(location)
    if not path.is_absolute():
        return location
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return location

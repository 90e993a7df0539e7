"""How an execution record reads on a terminal (``run``, ``show``, ``approve``, ``resume``)."""

from __future__ import annotations

from typing import Any

from loopengine.commands._console import Console
from loopengine.contract import Outcome

__all__ = ["print_execution"]


def _logged(data: dict[str, Any]) -> str | None:
    """What a built-in action wrote (``log_only``'s message, a notification), to show inline."""
    for key in ("log", "notification", "escalation"):
        entry = data.get(key)
        if isinstance(entry, dict):
            text = entry.get("message") or entry.get("reason")
            if text:
                return f"{key}: {text}"
    return None


_SUCCEEDED = frozenset(outcome.value for outcome in Outcome if outcome.succeeded)


def print_execution(console: Console, view: dict[str, Any], *, phases: bool = True) -> None:
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
        console.print(
            f"  approval: {gate['action']} {gate['status']} (deadline {gate['deadline']})"
        )
    if view.get("error"):
        console.print("  error: " + console.style(str(view["error"]), "red"))
    if phases:
        rows = [("phase", "ms", "ok", "outcome / note")]
        for phase in view["phases"]:
            skipped = phase["data"].get("skipped")
            note = skipped or phase["outcome"] or _logged(phase["data"]) or ""
            if phase["errors"]:
                note = phase["errors"][0]
            ran = "–" if skipped else "yes" if phase["success"] else "no"
            rows.append((phase["phase"], f"{phase['duration_ms']:.1f}", ran, str(note)))
        console.table(rows, (("bold",), (), (), ()))
    for artifact in view.get("artifacts", ()):
        console.print(f"  artifact {artifact['name']}: {artifact['location']}")

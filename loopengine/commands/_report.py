"""How an execution record reads on a terminal (``run``, ``show``, ``approve``, ``resume``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loopengine._json import JSON
from loopengine.commands._console import Console, near
from loopengine.commands._progress import phase_note
from loopengine.contract import Outcome
from loopengine.store import ExecutionRecord, PhaseResult, iso
from loopengine.store.approvals import Approval

__all__ = ["plan_lines", "show_record"]

_SHOWN_RESULTS = 10
"""Most action results the summary prints, one line each (``--json`` has them all)."""
_VALUE_WIDTH = 100
"""Most of a value (an action's result, a step's analysis, params, items) a line shows, as JSON."""


_SUCCEEDED = frozenset(outcome.value for outcome in Outcome if outcome.succeeded)
_ANSWERED = frozenset({Outcome.REJECTED.value, Outcome.ESCALATED.value})
_BEFORE_ACT = frozenset({Outcome.AWAITING_APPROVAL.value, Outcome.DRY_RUN.value})
"""Outcomes of an execution whose gated plan has not run: a person reads it to decide."""


def show_record(
    console: Console, record: ExecutionRecord, as_json: bool, *, phases: bool = True
) -> None:
    """An execution as ``show`` prints it: the full view with ``--json``, else the summary
    (without the phase table when live lines have just shown the phases)."""
    if as_json:
        console.json(record.view())
    else:
        _print_summary(console, record, phases=phases)


def _print_summary(console: Console, record: ExecutionRecord, *, phases: bool = True) -> None:
    """The human summary of an execution record."""
    execution = record.execution
    data = execution.context.get("data", {})
    outcome = execution.outcome or execution.status
    good = outcome in _SUCCEEDED
    console.print(
        f"{console.style(execution.loop_id, 'bold')}  {execution.id}  "
        + console.style(outcome, "green" if good else "red", "bold")
    )
    decision = data.get("decision")
    if decision:
        console.print(f"  decision: {decision.get('action')} ({decision.get('reason')})")
    plan = record.plan
    gated = plan is not None and outcome in _BEFORE_ACT
    for line in _analysis_lines(data.get("analysis")) if gated else ():
        console.print(line)
    _print_approval(console, record.approval, decision, gated)
    for line in plan_lines(plan) if plan is not None and gated else ():
        console.print(line)
    note = record.approval.note if record.approval is not None else None
    if execution.error and execution.error != note:
        if outcome in _ANSWERED:  # a person's note, or why it was escalated: not a failure
            console.print(f"  note: {execution.error}")
        else:
            console.print("  error: " + console.style(execution.error, "red"))
    if phases:
        _print_phases(console, record.phases)
    results = _results(record.phases)
    for line in results[:_SHOWN_RESULTS]:
        console.print(line)
    if len(results) > _SHOWN_RESULTS:
        more = len(results) - _SHOWN_RESULTS
        console.print(f"  … and {more} more results (`show --json` has them all)")
    for artifact in record.artifacts:
        console.print(f"  artifact {artifact.name}: {near(artifact.location)}")


def _print_approval(
    console: Console, gate: Approval | None, decision: Mapping[str, Any] | None, gated: bool
) -> None:
    if gate is not None:
        when = (
            f"deadline {iso(gate.deadline)}"
            if gate.status == "pending"
            else f"{iso(gate.decided_at)}" + (f": {gate.note}" if gate.note else "")
        )
        console.print(f"  approval: {gate.action} {gate.status} ({when})")
    elif gated:  # a dry run, stopped where the real run waits
        action = (decision or {}).get("action")
        console.print(f"  approval: {action} would wait for approval (dry run)")


def _print_phases(console: Console, phases: Sequence[PhaseResult]) -> None:
    rows = [("phase", "ms", "ok", "outcome / note")]
    for phase in phases:
        skipped = phase.data.get("skipped")
        note = skipped or phase_note(phase.data) or phase.outcome or ""
        if phase.errors:
            note = phase.errors[0]
        ran = "–" if skipped else "yes" if phase.success else "no"
        rows.append((phase.phase, f"{phase.duration_ms:.1f}", ran, str(note)))
    console.table(rows, (("bold",), (), (), ()))


def _short(value: Any) -> str:
    """``value`` as one line of JSON, cut at ``_VALUE_WIDTH`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _VALUE_WIDTH else text[: _VALUE_WIDTH - 1] + "…"


def _analysis_lines(analysis: Any) -> list[str]:
    """A line for what each analysis step found."""
    steps = analysis.items() if isinstance(analysis, dict) else ()
    return [f"  analysis {name}: {_short(found)}" for name, found in steps]


def plan_lines(plan: Sequence[Mapping[str, JSON]]) -> list[str]:
    """A line for each action a gated decision would run: its skill, params and items."""
    lines = []
    for step in plan:
        line = f"  would run {step['action_id']}: {step['skill']}"
        if "error" in step:
            lines.append(f"{line} (cannot resolve now: {step['error']})")
            continue
        line += f" {_short(step['params'])}"
        if "items" in step:
            count = step["count"]
            line += f" on {count} item{'' if count == 1 else 's'}: {_short(step['items'])}"
        if "feature_flag" in step:
            line += f" (if flag {step['feature_flag']} is on)"
        lines.append(line)
    return lines


def _results(phases: Sequence[PhaseResult]) -> list[str]:
    """A line for what each action call returned (a built-in decision's is on the act line)."""
    lines = []
    for phase in phases:
        builtin = phase.data.get("builtin")
        for call in phase.data.get("calls", ()):
            if "result" in call and call["step"] != builtin:
                dry = " (dry run)" if call.get("dry_run") else ""
                lines.append(f"  result of {call['step']}{dry}: {_short(call['result'])}")
    return lines

"""Phase 5, validate: assertions (re-running act when asked), success criteria, auto-rollback."""

from __future__ import annotations

from typing import Any

from loopengine.contract import Outcome, Severity, Validate
from loopengine.engine._rollback import roll_back
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.engine.phases._act import run_act
from loopengine.engine.phases._base import PhaseOutput, declared
from loopengine.expr import COMPARISONS

__all__ = ["run_validate"]


def _assertions(spec: Validate, run: Run) -> list[dict[str, Any]]:
    checked = []
    for assertion in spec.assertions:
        passed = assertion.expression.holds(run.data)
        entry: dict[str, Any] = {
            "expression": assertion.expression.source,
            "severity": assertion.severity.value,
            "passed": passed,
        }
        if not passed and assertion.message:
            entry["message"] = assertion.message
        checked.append(entry)
    return checked


def _failed_errors(checked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [a for a in checked if not a["passed"] and a["severity"] == Severity.ERROR.value]


def _retries_allowed(spec: Validate, failed: list[dict[str, Any]]) -> int:
    by_source = {a.expression.source: a for a in spec.assertions}
    allowed = [by_source[f["expression"]] for f in failed]
    if not allowed or not all(a.retry_on_fail for a in allowed):
        return 0
    return min(a.max_retries for a in allowed)


def _criteria(spec: Validate, run: Run) -> list[dict[str, Any]]:
    results = []
    for criterion in spec.success_criteria:
        value = criterion.metric.evaluate(run.data)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        met = numeric and COMPARISONS[criterion.operator.value](value, criterion.expected)
        results.append(
            {
                "metric": criterion.metric.source,
                "operator": criterion.operator.value,
                "expected": criterion.expected,
                "value": value,
                "met": bool(met),
            }
        )
    return results


async def run_validate(run: Run, services: Services) -> PhaseOutput:
    spec = declared(run.loop.spec.validate_, Validate)
    output = PhaseOutput()
    checked = _assertions(spec, run)
    retries = 0
    while (failed := _failed_errors(checked)) and retries < _retries_allowed(spec, failed):
        retries += 1
        await run_act(run, services)
        checked = _assertions(spec, run)
    criteria = _criteria(spec, run)
    rollback = spec.auto_rollback if spec.auto_rollback and spec.auto_rollback.enabled else None
    triggered = [
        c.source for c in (rollback.trigger_conditions if rollback else ()) if c.holds(run.data)
    ]
    failed = _failed_errors(checked)
    output.data.update(assertions=checked, criteria=criteria, retries=retries)
    run.data["validate"] = {
        "passed": not failed and not triggered,
        "failed": [f["expression"] for f in failed],
        "criteria_met": all(c["met"] for c in criteria),
    }
    output.errors.extend(f"assertion failed: {f['expression']}" for f in failed)
    if triggered:
        output.data["rollback_triggered_by"] = triggered
    if not failed and not triggered:
        return output
    if rollback is None:
        output.stop = Outcome.FAILED
        return output
    result = await roll_back(run, services, rollback.max_rollback_time_ms)
    output.data["rollback"] = result
    output.stop = Outcome.ROLLED_BACK if result["complete"] else Outcome.FAILED
    output.errors.extend(result["errors"])
    return output

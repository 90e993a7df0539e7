"""Phase 3, decide: choose the action; gate it behind a human approval when the loop says so, with
the plan a person approves (a dry run stops at the gate, as the real run would wait there)."""

from __future__ import annotations

from loopengine.contract import Outcome
from loopengine.engine._decisions import choose
from loopengine.engine._run import Run
from loopengine.engine._services import Services
from loopengine.engine.phases._act import plan
from loopengine.engine.phases._base import PhaseOutput

__all__ = ["NO_OP_ACTIONS", "run_decide"]

NO_OP_ACTIONS = frozenset({"none"})
_WOULD_WAIT = "would wait for approval"
"""What a dry run says where the real run would wait for a person: it stops there too."""


async def run_decide(run: Run, services: Services) -> PhaseOutput:
    spec = run.loop.spec.decide
    assert spec is not None
    confidence = float(run.data.get("confidence", 1.0))
    choice = choose(spec.decision_tree, run.data, confidence, spec.fallback_action)
    decision = choice.as_dict()
    run.data["decision"] = decision
    output = PhaseOutput(data={"decision": decision})
    if choice.action is None or choice.action in NO_OP_ACTIONS:
        output.stop = Outcome.NO_ACTION
    elif spec.human_approval and choice.action in spec.human_approval.required_for:
        output.data["approval"] = {
            "action": choice.action,
            "timeout_hours": spec.human_approval.timeout_hours,
            "escalation_target": spec.human_approval.escalation_target,
            "plan": plan(run, services, choice.action),
        }
        if run.dry_run:
            output.stop = Outcome.DRY_RUN
            output.data["note"] = _WOULD_WAIT
        else:
            output.stop = Outcome.AWAITING_APPROVAL
    return output

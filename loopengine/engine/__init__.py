"""One execution of a loop: the seven phases, the skill middleware stack, persistence, resume and
approvals."""

from loopengine.engine._lifecycle import (
    answer_approval,
    escalate_overdue,
    recover_interrupted,
    resume,
)
from loopengine.engine._middleware import translated
from loopengine.engine._persistence import owner_died
from loopengine.engine._runner import Engine, ExecutionDone, PhaseListener
from loopengine.engine._services import Services

__all__ = [
    "Engine",
    "ExecutionDone",
    "PhaseListener",
    "Services",
    "answer_approval",
    "escalate_overdue",
    "owner_died",
    "recover_interrupted",
    "resume",
    "translated",
]

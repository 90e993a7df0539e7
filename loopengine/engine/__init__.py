"""One execution of a loop: the seven phases, the skill middleware stack, persistence, resume and
approvals."""

from loopengine.engine._envelope import new_envelope
from loopengine.engine._lifecycle import (
    answer_approval,
    escalate_overdue,
    recover_interrupted,
    resume,
)
from loopengine.engine._records import PhaseRecord, iso
from loopengine.engine._runner import Engine, ExecutionDone, PhaseListener
from loopengine.engine._services import Services
from loopengine.engine._views import history_view, read_execution

__all__ = [
    "Engine",
    "ExecutionDone",
    "PhaseListener",
    "PhaseRecord",
    "Services",
    "answer_approval",
    "escalate_overdue",
    "history_view",
    "iso",
    "new_envelope",
    "read_execution",
    "recover_interrupted",
    "resume",
]

"""The mutable state of one execution while it runs (owned by the runner, never shared)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopengine.contract import Loop
from loopengine.engine._logs import ExecutionLog
from loopengine.expr import Template
from loopengine.store import Artifact, JobEnvelope, PhaseResult, Usage
from loopengine.store.effects import Effect

__all__ = ["Rollback", "Run"]


@dataclass(frozen=True, slots=True)
class Rollback:
    """A completed action that can be undone: its rollback skill, params and the item it touched."""

    action_id: str
    skill: str
    params: Template
    extra: dict[str, Any]
    key: str


@dataclass(slots=True)
class Run:
    execution_id: str
    loop: Loop
    envelope: JobEnvelope
    data: dict[str, Any]
    started_at: float
    trigger_type: str
    dry_run: bool = False
    phases: list[PhaseResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    rollbacks: list[Rollback] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    written: list[Effect] = field(default_factory=list)
    """The writes the current phase's skills handed over (``SkillOutput.effects``)."""
    artifacts: list[Artifact] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    act_attempts: int = 0
    samples: int = 0
    finishing: bool = False
    learned: bool = False
    """Whether learn handed over a write of the loop's learned state."""
    last_adjusted_at: float | None = None
    on_call: Callable[[], Callable[[], None]] | None = None
    """Told as each skill call starts, which it answers with what to tell as the call ends (the
    recorder hands over the phases it held should the call last)."""
    log: ExecutionLog = field(default_factory=lambda: ExecutionLog(time.time))
    """What its skills logged since its last commit (a resumed execution counts anew)."""

    @property
    def id(self) -> str:
        return self.execution_id

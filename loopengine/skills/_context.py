"""What a skill receives and may return."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopengine._secrets import SecretFilter
from loopengine.contract import Config

if TYPE_CHECKING:
    from loopengine.store import Store
    from loopengine.store.effects import Effect

__all__ = ["ROLLBACK_SUFFIX", "Progress", "SkillContext", "SkillOutput", "Spend"]

Progress = Callable[[str, Mapping[str, Any]], None]
"""Told what a long skill is doing (an event name and its fields), for live displays."""
Spend = Callable[[int, int], str | None]
"""Counts ``(tokens, llm_calls)`` into the loop's budget as they happen (the one way usage is
counted); returns why the budget is spent, if it is."""


ROLLBACK_SUFFIX = ":rollback"
"""Ends the idempotency key of a rollback call, after the key of the action call it undoes."""

_LOGGER = logging.getLogger("loopengine.skills")
"""What skills log to; secret values are masked in every record it takes."""
_LOGGER.addFilter(SecretFilter())


@dataclass(frozen=True, slots=True)
class SkillContext:
    """The execution a skill runs in; ``idempotency_key`` is stable across a resumed re-run."""

    execution_id: str
    loop_id: str
    phase: str
    step: str
    idempotency_key: str
    data: Mapping[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    """A dry run: the execution's, or an action's ``dry_run_first`` call; a skill of any phase
    then changes nothing (an action's skill also gets ``dry_run: true``)."""
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger] = field(
        default_factory=lambda: _LOGGER
    )
    """Where the skill says what it does: INFO and above join the execution's log (``show``,
    ``GET /executions/{id}/logs``, the console) besides the process's own."""
    llm_runtime: Callable[[], Any] | None = None
    """Gives the engine's LLM runtime, built on its first call (see ``llm``)."""
    spend: Spend | None = None
    progress: Progress | None = None
    """Tell a live display what a long skill is doing (event name, fields); None if none listens."""
    store: Store | None = None
    """The engine's store (events, metrics, state); None outside an engine."""
    config: Config = field(default_factory=Config)
    base: Path = field(default_factory=Path.cwd)
    """The folder relative paths of the config start from."""
    loop_file: Path | None = None
    """The loop's file (the actions' default root is its folder); None outside an engine."""
    private: tuple[Path, ...] = ()
    """What the tools never see and the file actions never touch (the config, the store)."""
    scope: Mapping[str, Any] = field(default_factory=dict)
    """The job's bounded scope (``limit``…)."""
    clock: Callable[[], float] = time.time

    @property
    def llm(self) -> Any:
        """The engine's LLM runtime (cluster, tools, threads), for LLM skills; None without one.
        Built when a skill first asks: the HTTP client costs ~0.3 s that other skills never pay."""
        return None if self.llm_runtime is None else self.llm_runtime()

    @property
    def undoes(self) -> str | None:
        """The idempotency key of the action call this rollback call undoes; None when this is
        no rollback call."""
        key = self.idempotency_key
        return key.removesuffix(ROLLBACK_SUFFIX) if key.endswith(ROLLBACK_SUFFIX) else None


@dataclass(frozen=True, slots=True)
class SkillOutput:
    """A skill's result: ``data`` is merged into the context; the rest is recorded."""

    data: Any = None
    artifacts: tuple[Mapping[str, Any], ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)
    confidence: float | None = None
    effects: tuple[Effect, ...] = ()
    """What the store writes for the call with its phase's commit (a built-in skill's records):
    kept exactly when the phase is, in the same transaction."""

"""What a skill receives and may return."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Progress", "SkillContext", "SkillOutput"]

Progress = Callable[[str, Mapping[str, Any]], None]
"""Told what a long skill is doing (an event name and its fields), for live displays."""


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
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("loopengine.skills"))
    llm: Any = None
    """The engine's LLM runtime (cluster, tools, threads), for LLM skills; None without one."""
    spend: Callable[[int, int], str | None] | None = None
    """Count ``(tokens, llm_calls)`` into the loop's budget; returns why it is spent, if it is."""
    progress: Progress | None = None
    """Tell a live display what a long skill is doing (event name, fields); None if none listens."""


@dataclass(frozen=True, slots=True)
class SkillOutput:
    """A skill's result: ``data`` is merged into the context; the rest is recorded."""

    data: Any = None
    artifacts: tuple[Mapping[str, Any], ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)
    confidence: float | None = None

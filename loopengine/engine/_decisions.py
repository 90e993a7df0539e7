"""Decide: the first rule whose condition holds with enough confidence wins; pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loopengine.contract import Rule

__all__ = ["Choice", "choose"]


@dataclass(frozen=True, slots=True)
class Choice:
    """The decision taken and why: the rule (None for the fallback) and rules passed over."""

    action: str | None
    rule: int | None
    priority: str | None
    condition: str | None
    confidence: float
    skipped_low_confidence: tuple[dict[str, Any], ...] = ()

    @property
    def reason(self) -> str:
        if self.rule is not None:
            return f"rule {self.rule} holds: {self.condition}"
        if self.action is not None:
            return "no rule applied: fallback action"
        return "no rule applied and no fallback action"

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "rule": self.rule,
            "priority": self.priority,
            "condition": self.condition,
            "confidence": self.confidence,
            "reason": self.reason,
            "skipped_low_confidence": list(self.skipped_low_confidence),
        }


def choose(rules: Sequence[Rule], data: Any, confidence: float, fallback: str | None) -> Choice:
    """Evaluate ``rules`` in order; rules that held but lacked confidence are recorded."""
    skipped: list[dict[str, Any]] = []
    for index, rule in enumerate(rules):
        if not rule.condition.holds(data):
            continue
        if confidence < rule.confidence_required:
            skipped.append(
                {"rule": index, "action": rule.action, "required": rule.confidence_required}
            )
            continue
        return Choice(
            rule.action,
            index,
            rule.priority.value,
            rule.condition.source,
            confidence,
            tuple(skipped),
        )
    return Choice(fallback, None, None, None, confidence, tuple(skipped))

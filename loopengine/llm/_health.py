"""Node health: cooled down after repeated failures (not one), at once on 401/404; pure."""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["COOL_AFTER", "NodeHealth"]

COOL_AFTER = 3
_BASE_COOLDOWN_S = 30.0
_MAX_COOLDOWN_S = 600.0
_FATAL = frozenset({401, 403, 404})


@dataclass(frozen=True, slots=True)
class NodeHealth:
    """Consecutive failures and until when the node is skipped."""

    failures: int = 0
    cooled_until: float = 0.0
    last_error: str | None = None

    def available(self, now: float) -> bool:
        return now >= self.cooled_until

    def after_success(self) -> NodeHealth:
        return NodeHealth()

    def after_failure(self, now: float, error: str, status_code: int | None = None) -> NodeHealth:
        """Count a failure; cool the node down once failures repeat, or at once when fatal."""
        failures = self.failures + 1
        if status_code in _FATAL:
            return NodeHealth(failures, now + _MAX_COOLDOWN_S, error)
        if failures < COOL_AFTER:
            return replace(self, failures=failures, last_error=error)
        cooldown = min(_MAX_COOLDOWN_S, _BASE_COOLDOWN_S * 2 ** (failures - COOL_AFTER))
        return NodeHealth(failures, now + cooldown, error)

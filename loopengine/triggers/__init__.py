"""Pure trigger decisions: cron schedules, event matching, threshold edges; no I/O."""

from loopengine.triggers._cron import cron_problem, has_seconds
from loopengine.triggers._events import matches, pattern_problem

__all__ = [
    "cron_problem",
    "has_seconds",
    "matches",
    "pattern_problem",
]

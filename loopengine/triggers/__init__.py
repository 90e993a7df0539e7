"""Pure trigger decisions: cron schedules and catch-up, event matching, threshold edges and
overlap; no I/O."""

from loopengine.triggers._catchup import CatchUp, catch_up, jittered
from loopengine.triggers._cron import NICKNAMES, cron_problem, has_seconds
from loopengine.triggers._events import matches, pattern_problem
from loopengine.triggers._index import PatternIndex
from loopengine.triggers._overlap import Overlap, OverlapDecision, on_overlap
from loopengine.triggers._schedule import CronSchedule, Fire
from loopengine.triggers._threshold import ThresholdRule, ThresholdState, evaluate

__all__ = [
    "NICKNAMES",
    "CatchUp",
    "CronSchedule",
    "Fire",
    "Overlap",
    "OverlapDecision",
    "PatternIndex",
    "ThresholdRule",
    "ThresholdState",
    "catch_up",
    "cron_problem",
    "evaluate",
    "has_seconds",
    "jittered",
    "matches",
    "on_overlap",
    "pattern_problem",
]

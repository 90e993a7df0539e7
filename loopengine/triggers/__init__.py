"""Pure trigger decisions: cron schedules and catch-up, event matching, threshold edges,
overlap and webhook signatures; no I/O.

Names load with their module on first use: validating a loop needs only the cron and pattern
checks, the daemon the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports

if TYPE_CHECKING:
    from loopengine.triggers._catchup import CatchUp, catch_up, jittered
    from loopengine.triggers._cron import NICKNAMES, cron_problem, has_seconds
    from loopengine.triggers._events import (
        MAX_EVENT_BYTES,
        MAX_EVENT_DEPTH,
        EventDataProblem,
        event_data_problem,
        event_problem,
        matches,
        nesting,
        pattern_problem,
        stream_entry_event,
    )
    from loopengine.triggers._gaps import MAX_GAPS, LogFollower
    from loopengine.triggers._index import PatternIndex
    from loopengine.triggers._overlap import Overlap, OverlapDecision, on_overlap
    from loopengine.triggers._schedule import CronSchedule, Fire
    from loopengine.triggers._threshold import ThresholdRule, ThresholdState, evaluate
    from loopengine.triggers._webhooks import (
        MAX_HEADER_CHARS,
        SecretProblem,
        delivery_of,
        replay_digest,
        secret_problem,
        standard_signature,
        verify_delivery,
        webhook_key,
    )
    from loopengine.triggers._zones import time_zone

_EXPORTS = {
    "MAX_EVENT_BYTES": "loopengine.triggers._events",
    "MAX_EVENT_DEPTH": "loopengine.triggers._events",
    "MAX_GAPS": "loopengine.triggers._gaps",
    "LogFollower": "loopengine.triggers._gaps",
    "MAX_HEADER_CHARS": "loopengine.triggers._webhooks",
    "NICKNAMES": "loopengine.triggers._cron",
    "EventDataProblem": "loopengine.triggers._events",
    "event_data_problem": "loopengine.triggers._events",
    "event_problem": "loopengine.triggers._events",
    "stream_entry_event": "loopengine.triggers._events",
    "nesting": "loopengine.triggers._events",
    "CatchUp": "loopengine.triggers._catchup",
    "CronSchedule": "loopengine.triggers._schedule",
    "Fire": "loopengine.triggers._schedule",
    "Overlap": "loopengine.triggers._overlap",
    "OverlapDecision": "loopengine.triggers._overlap",
    "PatternIndex": "loopengine.triggers._index",
    "ThresholdRule": "loopengine.triggers._threshold",
    "ThresholdState": "loopengine.triggers._threshold",
    "catch_up": "loopengine.triggers._catchup",
    "cron_problem": "loopengine.triggers._cron",
    "evaluate": "loopengine.triggers._threshold",
    "has_seconds": "loopengine.triggers._cron",
    "jittered": "loopengine.triggers._catchup",
    "matches": "loopengine.triggers._events",
    "on_overlap": "loopengine.triggers._overlap",
    "pattern_problem": "loopengine.triggers._events",
    "time_zone": "loopengine.triggers._zones",
    "delivery_of": "loopengine.triggers._webhooks",
    "replay_digest": "loopengine.triggers._webhooks",
    "SecretProblem": "loopengine.triggers._webhooks",
    "secret_problem": "loopengine.triggers._webhooks",
    "standard_signature": "loopengine.triggers._webhooks",
    "verify_delivery": "loopengine.triggers._webhooks",
    "webhook_key": "loopengine.triggers._webhooks",
}

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_EVENT_DEPTH",
    "MAX_GAPS",
    "MAX_HEADER_CHARS",
    "NICKNAMES",
    "CatchUp",
    "CronSchedule",
    "EventDataProblem",
    "Fire",
    "LogFollower",
    "Overlap",
    "OverlapDecision",
    "PatternIndex",
    "SecretProblem",
    "ThresholdRule",
    "ThresholdState",
    "catch_up",
    "cron_problem",
    "delivery_of",
    "evaluate",
    "event_data_problem",
    "event_problem",
    "has_seconds",
    "jittered",
    "matches",
    "nesting",
    "on_overlap",
    "pattern_problem",
    "replay_digest",
    "secret_problem",
    "standard_signature",
    "stream_entry_event",
    "time_zone",
    "verify_delivery",
    "webhook_key",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

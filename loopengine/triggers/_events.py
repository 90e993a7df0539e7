"""Events: names and their data (bounded), name patterns (dot-separated, ``*`` one segment,
``**`` any depth); pure."""

from __future__ import annotations

import re

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_EVENT_DEPTH",
    "event_problem",
    "matches",
    "nesting",
    "pattern_problem",
]

MAX_EVENT_BYTES = 65_536
"""Most bytes of an event's data, as JSON (``emit --data``, ``POST /events``)."""
MAX_EVENT_DEPTH = 32
"""Most levels an event's data nests."""
_SEGMENT = re.compile(r"[A-Za-z0-9_\-]+|\*|\*\*")
_NAME = re.compile(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*")


def event_problem(name: str) -> str | None:
    """Why ``name`` is not an event name, or None when it is."""
    if len(name) > 200 or not _NAME.fullmatch(name):
        return (
            f"event name {name[:200]!r}: write dot-separated names of letters, digits, '_' or "
            "'-', e.g. seo.page.updated"
        )
    return None


def nesting(value: object) -> int:
    """How deeply ``value`` nests (a scalar is 0), without recursion; counting stops past
    ``MAX_EVENT_DEPTH``."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_EVENT_DEPTH and isinstance(item, dict | list):
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return deepest


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid event pattern, or None when it is."""
    for segment in pattern.split("."):
        if not _SEGMENT.fullmatch(segment):
            return (
                f"invalid event pattern {pattern!r}: segment {segment!r} must be a name "
                "(letters, digits, '_', '-'), '*' or '**'"
            )
    return None


def _match(pattern: tuple[str, ...], name: tuple[str, ...]) -> bool:
    if not pattern:
        return not name
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, name[skip:]) for skip in range(len(name) + 1))
    return bool(name) and bool(name[0]) and head in ("*", name[0]) and _match(rest, name[1:])


def matches(pattern: str, name: str) -> bool:
    """Whether event ``name`` matches ``pattern`` (anchored, case-sensitive)."""
    return _match(tuple(pattern.split(".")), tuple(name.split(".")))

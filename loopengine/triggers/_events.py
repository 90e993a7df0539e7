"""Events: names and their data (bounded), name patterns (dot-separated, ``*`` one segment,
``**`` any depth); pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_ENTRY_CHARS",
    "MAX_EVENT_BYTES",
    "MAX_EVENT_DEPTH",
    "EventDataProblem",
    "event_data_problem",
    "event_problem",
    "matches",
    "nesting",
    "pattern_problem",
    "stream_entry_event",
]

MAX_EVENT_BYTES = 65_536
"""Most bytes of an event's data, as compact JSON in UTF-8 (``emit --data``, ``POST /events``,
``event.emit``)."""
MAX_EVENT_DEPTH = 32
"""Most levels an event's data nests."""
MAX_ENTRY_CHARS = 4 * MAX_EVENT_BYTES
"""Most characters of a stream entry's ``data`` field read (its JSON may be spaced out)."""
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


@dataclass(frozen=True, slots=True)
class EventDataProblem:
    """Why a value cannot be an event's data; ``too_large`` when only its size is the matter."""

    message: str
    too_large: bool = False

    @classmethod
    def too_deep(cls, named: str) -> EventDataProblem:
        return cls(f"{named} is nested more than {MAX_EVENT_DEPTH} levels: flatten it")

    @classmethod
    def too_big(cls, named: str) -> EventDataProblem:
        said = f"{named} is over {MAX_EVENT_BYTES} bytes as JSON: send a reference to it instead"
        return cls(said, too_large=True)


def event_data_problem(data: object, named: str = "data") -> EventDataProblem | None:
    """Why ``data`` cannot be an event's data (``named`` so in the message), or None: nested past
    ``MAX_EVENT_DEPTH`` (looked at first, so encoding never recurses without end), not JSON, or
    over ``MAX_EVENT_BYTES`` as compact JSON in UTF-8."""
    if nesting(data) > MAX_EVENT_DEPTH:
        return EventDataProblem.too_deep(named)
    try:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(text.encode())
    except (TypeError, ValueError) as exc:
        return EventDataProblem(f"{named} is not JSON: {exc}")
    return EventDataProblem.too_big(named) if size > MAX_EVENT_BYTES else None


def stream_entry_event(fields: Mapping[bytes, bytes] | None) -> tuple[str, Any] | str:
    """The event name and data a stream entry carries (field ``name``, field ``data`` holding
    JSON, ``{}`` when absent), or why it carries none; the text is bounded before it is parsed."""
    if not fields:
        return "the entry is empty or was deleted"
    try:
        name = fields.get(b"name", b"").decode()
        text = fields.get(b"data", b"{}").decode()
    except UnicodeDecodeError:
        return "its fields are not UTF-8"
    if problem := event_problem(name):
        return f"field 'name': {problem}"
    if len(text) > MAX_ENTRY_CHARS:
        return f"field 'data' is over {MAX_ENTRY_CHARS} characters: send a reference instead"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"field 'data' is not JSON: {str(exc)[:200]}"
    if problem_of_data := event_data_problem(data, named="field 'data'"):
        return problem_of_data.message
    return name, data


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
    """One pass over ``pattern``, keeping the segments of ``name`` it may have reached: a pattern
    of many ``**`` costs its length times the name's, never one try per way to split the name."""
    reached = {0}
    for head in pattern:
        if head == "**":
            reached = set(range(min(reached), len(name) + 1))
        else:
            reached = {
                i + 1 for i in reached if i < len(name) and name[i] and head in ("*", name[i])
            }
        if not reached:
            return False
    return len(name) in reached


def matches(pattern: str, name: str) -> bool:
    """Whether event ``name`` matches ``pattern`` (anchored, case-sensitive)."""
    return _match(tuple(pattern.split(".")), tuple(name.split(".")))

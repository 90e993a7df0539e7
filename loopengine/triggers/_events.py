"""Event name patterns: dot-separated, ``*`` one segment, ``**`` any depth; pure."""

from __future__ import annotations

import re

__all__ = ["matches", "pattern_problem"]

_SEGMENT = re.compile(r"[A-Za-z0-9_\-]+|\*|\*\*")


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

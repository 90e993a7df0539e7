"""Cron expressions: 5 fields, 6 with seconds first, or a nickname (``@daily``); pure.

croniter (~14 ms to import) loads when a cron expression is first checked.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NICKNAMES", "cron_problem", "has_seconds"]

NICKNAMES: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""Each nickname and the five fields it stands for."""


def has_seconds(expression: str) -> bool:
    """Whether the expression has a leading seconds field."""
    return len(expression.split()) == 6


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a valid schedule, or None when it is."""
    text = expression.strip()
    if text in NICKNAMES:
        return None
    fields = text.split()
    if len(fields) not in (5, 6):
        return (
            f"cron expression {expression!r} has {len(fields)} fields; write 5 "
            "(minute hour day month weekday) or 6 with seconds first"
        )
    from croniter import croniter

    if not croniter.is_valid(text, second_at_beginning=has_seconds(text)):
        return f"invalid cron expression {expression!r}: a field is out of range or malformed"
    return None

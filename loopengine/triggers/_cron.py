"""Cron expressions: 5 fields, 6 with seconds first, or a nickname (``@daily``); pure.

croniter decides what is valid (it walks the schedules). It costs ~20 ms and a subprocess to
import, so an expression made only of plain numbers, ``*``, ascending ranges, steps and lists,
each within its field, is known valid (or never to fire) without it; anything else (names, ``?``,
``L``, ``W``, ``#``, wrap-around ranges, errors) is left to croniter.

An expression that never fires is invalid: the Gregorian calendar, weekdays included, repeats
every 400 years, so one croniter finds no fire for in 400 years (``0 0 31 2 *``) never fires.
"""

from __future__ import annotations

import re
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

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
"""Minute, hour, day of month, month, day of week; seconds come first as (0, 59)."""
_PLAIN = re.compile(r"(\*|(\d{1,2})(?:-(\d{1,2}))?)(?:/(\d{1,3}))?")
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_CYCLE_YEARS = 400
"""Years after which the Gregorian calendar repeats, weekdays included."""


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
    if _plainly_valid(fields):
        return None if _plainly_fires(fields) else _never(expression)
    from croniter import CroniterBadDateError, croniter

    seconds = has_seconds(text)
    if not croniter.is_valid(text, second_at_beginning=seconds):
        return f"invalid cron expression {expression!r}: a field is out of range or malformed"
    try:
        croniter(
            text, 0, second_at_beginning=seconds, max_years_between_matches=_CYCLE_YEARS
        ).get_next(float)
    except CroniterBadDateError:
        return _never(expression)
    return None


def _never(expression: str) -> str:
    return (
        f"cron expression {expression!r} never fires: no date matches it (February has 29 days "
        "at most; April, June, September and November 30): change the day or the month"
    )


def _plainly_valid(fields: list[str]) -> bool:
    """Whether every field is a list of plain items within its range (see the module)."""
    ranges = ((0, 59), *_RANGES) if len(fields) == 6 else _RANGES
    for field, (low, high) in zip(fields, ranges, strict=True):
        for item in field.split(","):
            found = _PLAIN.fullmatch(item)
            if found is None or found[4] in ("0", "00", "000"):
                return False
            if found[2] is not None:
                first = int(found[2])
                last = int(found[3]) if found[3] is not None else first
                if not low <= first <= last <= high:
                    return False
    return True


def _plainly_fires(fields: list[str]) -> bool:
    """Whether a plain expression fires: its first day of the month occurs in one of its months,
    or a weekday field other than ``*`` fires on its own (croniter's day-or, as Vixie cron's)."""
    day = min(_values(item, 1, 31)[0] for item in fields[-3].split(","))
    months = (month for item in fields[-2].split(",") for month in _values(item, 1, 12))
    weekdays = fields[-1].split(",")
    return any(day <= _MONTH_DAYS[month - 1] for month in months) or "*" not in weekdays


def _values(item: str, low: int, high: int) -> range:
    """The values a plain item (checked by ``_plainly_valid``) takes within ``low``..``high``."""
    found = _PLAIN.fullmatch(item)
    assert found is not None
    step = int(found[4] or 1)
    if found[2] is None:
        return range(low, high + 1, step)
    first = int(found[2])
    last = int(found[3]) if found[3] is not None else (high if found[4] else first)
    return range(first, last + 1, step)

"""Cron expressions: 5 fields, 6 with seconds first, or a nickname (``@daily``); pure.

Checking an expression does not load croniter (~15 ms and a subprocess at import), which only
the daemon and ``plan`` need to walk a schedule. What is accepted is Vixie cron's syntax (numbers
and names, ``*``, ranges, steps, lists) plus ``?`` and Quartz's ``L`` (last day of the month) and
``n#k`` (k-th weekday n of the month), a subset of what croniter reads (a test checks it on
generated expressions).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names standing for ``low``, ``low + 1``… (months, weekdays)."""
    any_mark: bool = False
    """Whether ``?`` may stand for ``*``."""


_SECOND = _Field("second", 0, 59)
_MINUTE = _Field("minute", 0, 59)
_HOUR = _Field("hour", 0, 23)
_DAY = _Field("day of month", 1, 31, any_mark=True)
_MONTH = _Field(
    "month",
    1,
    12,
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
)
_WEEKDAY = _Field("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat"), True)
_FIELDS = (_MINUTE, _HOUR, _DAY, _MONTH, _WEEKDAY)
_ITEM = re.compile(
    r"(?P<start>\*|\?|[A-Za-z0-9]+)(?:-(?P<end>[A-Za-z0-9]+))?(?:/(?P<step>[0-9]+))?"
)
_NTH_WEEKDAY = re.compile(r"([0-7])#([1-5])")


def has_seconds(expression: str) -> bool:
    """Whether the expression has a leading seconds field."""
    return len(expression.split()) == 6


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a valid schedule, or None when it is."""
    text = expression.strip()
    if text in NICKNAMES:
        return None
    words = text.split()
    if len(words) not in (5, 6):
        return (
            f"cron expression {expression!r} has {len(words)} fields; write 5 "
            "(minute hour day month weekday) or 6 with seconds first"
        )
    fields = (_SECOND, *_FIELDS) if len(words) == 6 else _FIELDS
    for word, field in zip(words, fields, strict=True):
        for item in word.split(","):
            if (problem := _item_problem(item, field)) is not None:
                return f"invalid cron expression {expression!r}: {field.name} {problem}"
    return None


def _item_problem(item: str, field: _Field) -> str | None:
    """Why one comma-separated item of a field is wrong, or None."""
    if field is _DAY and item.upper() == "L":
        return None
    if field is _WEEKDAY and _NTH_WEEKDAY.fullmatch(item):
        return None
    found = _ITEM.fullmatch(item)
    if found is None:
        return f"{item!r} is not a number, a name, '*', a range or a step"
    start, end, step = found["start"], found["end"], found["step"]
    if step is not None and int(step) == 0:
        return f"{item!r} has a step of 0"
    if start == "*" or (start == "?" and field.any_mark and step is None):
        return None if end is None else f"{item!r} is malformed"
    first = _value(start, field)
    last = first if end is None else _value(end, field)
    if first is None or last is None:
        named = f" or a name ({', '.join(field.names)})" if field.names else ""
        return f"{item!r} is not a number from {field.low} to {field.high}{named}"
    if last < first:
        return f"{item!r} runs backwards: write the lower bound first"
    return None


def _value(word: str, field: _Field) -> int | None:
    """The number ``word`` (a number or a name) stands for in ``field``, if it is one."""
    if word.isascii() and word.isdigit():
        number = int(word)
        return number if field.low <= number <= field.high else None
    lowered = word.lower()
    if lowered in field.names:
        return field.low + field.names.index(lowered)
    return None

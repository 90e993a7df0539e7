"""Cron next-fire times in an IANA time zone, with Vixie cron's DST rules; pure.

croniter walks naive local wall times (so it takes no DST decision of its own) and zoneinfo maps
each one to UTC through its ``fold=0``/``fold=1`` readings. A fixed-time job (no ``*`` leading its
seconds, minute or hour field) whose wall time is skipped by spring-forward fires once, right
after the gap, and a repeated wall time fires once, at its first reading; any other job follows
elapsed time: nothing inside a gap, both passes of a repeated hour. croniter (~14 ms to import)
loads when the first schedule is parsed.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from loopengine.errors import TriggerError
from loopengine.triggers._cron import NICKNAMES, cron_problem, has_seconds
from loopengine.triggers._zones import time_zone

if TYPE_CHECKING:
    from croniter import croniter

__all__ = ["CronSchedule", "Fire"]

_UTC_ZONES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT"})
_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class Fire:
    """One fire of a schedule."""

    at: float
    """UTC epoch seconds when it fires."""
    local: datetime
    """The aware local wall time of ``at`` in the schedule's zone."""
    note: str | None
    """The DST decision taken for this fire; None when no DST change is involved."""


def _naive(wall: float) -> datetime:
    return _EPOCH + timedelta(seconds=wall)


def _clock(wall: float) -> str:
    moment = _naive(wall)
    return f"{moment:%H:%M:%S}" if moment.second else f"{moment:%H:%M}"


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A cron expression read in an IANA zone, parsed once; queries never change it.

    Instants are UTC epoch seconds; inside, a wall time is "local epoch seconds": the local
    clock read as if it were UTC.
    """

    expression: str
    timezone: str = "UTC"
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)
    _template: croniter[float] = field(init=False, repr=False, compare=False)
    _fixed: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from croniter import CroniterError, croniter

        if problem := cron_problem(self.expression):
            raise TriggerError(problem)
        zone = time_zone(self.timezone)
        if zone is None:
            raise TriggerError(
                f"unknown time zone {self.timezone!r}: write an IANA name such as 'Europe/Paris'"
            )
        text = self.expression.strip()
        text = NICKNAMES.get(text, text)
        seconds = has_seconds(text)
        try:
            template = croniter(text, 0, second_at_beginning=seconds)
            template.get_next(float)
        except (CroniterError, ValueError) as exc:
            raise TriggerError(f"invalid cron expression {self.expression!r}: {exc}") from None
        clock_fields = text.split()[: 3 if seconds else 2]
        object.__setattr__(self, "_zone", zone)
        object.__setattr__(self, "_template", template)
        object.__setattr__(self, "_fixed", not any(f.startswith("*") for f in clock_fields))

    @classmethod
    def parse(cls, expression: str, timezone: str = "UTC") -> CronSchedule:
        """The schedule; TriggerError naming the expression or zone when either is invalid."""
        return cls(expression, timezone)

    @property
    def fixed_time(self) -> bool:
        """Vixie's fixed-time job: no ``*`` leads its seconds, minute or hour field."""
        return self._fixed

    def next_fire(self, after: float) -> Fire:
        """The first fire strictly after ``after`` (UTC epoch seconds)."""
        start = math.floor(after)
        if self.timezone in _UTC_ZONES:
            return self._fire(self._next_wall(start), None)
        wall = self._wall_at(start)
        first = self._first_pass(start, wall)
        if self._fixed:
            return first
        second = self._second_pass(start, wall)
        return second if second is not None and second.at < first.at else first

    def fires(self, start: float, end: float, limit: int) -> list[Fire]:
        """The fires with ``start < at <= end``, oldest first, at most ``limit`` of them."""
        found: list[Fire] = []
        while len(found) < limit:
            fire = self.next_fire(found[-1].at if found else start)
            if fire.at > end:
                break
            found.append(fire)
        return found

    def period(self, at: float) -> float:
        """Seconds between the next fire after ``at`` and the one after it."""
        first = self.next_fire(at)
        return self.next_fire(first.at).at - first.at

    def _first_pass(self, start: int, wall: float) -> Fire:
        """The next fire at the first (or only) reading of a wall time, or right after a gap."""
        while True:
            wall = self._next_wall(wall)
            first, last = self._readings(wall)
            if first > last:
                edge = self._transition(last, first)
                if self._fixed:
                    note = (
                        f"{_clock(wall)} does not exist (DST gap): "
                        f"fires at {_clock(self._wall_at(edge))}, right after the gap"
                    )
                    return self._fire(edge, note)
                wall = self._wall_at(edge) - 1
            elif first > start:
                folded = self._fixed and first < last
                note = f"{_clock(wall)} happens twice (DST fold): fires once, at the first"
                return self._fire(first, note if folded else None)
            elif first < last:
                wall = self._transition(first, last) + (wall - first) - 1

    def _second_pass(self, start: int, wall: float) -> Fire | None:
        """The next second reading of a repeated wall time, when ``start`` lies in a fold."""
        first, last = self._readings(wall)
        if first == last:
            return None
        edge = self._transition(first, last)
        offset = wall - last
        candidate = self._next_wall(max(edge + offset - 1, start + offset))
        if candidate >= edge + wall - first:
            return None
        note = f"{_clock(candidate)} again (DST fold): sub-hourly schedules follow elapsed time"
        return self._fire(candidate - offset, note)

    def _next_wall(self, wall: float) -> float:
        """The first candidate wall time strictly after ``wall``; the template stays untouched."""
        return copy.copy(self._template).get_next(float, wall)

    def _readings(self, wall: float) -> tuple[float, float]:
        """The UTC instants of the first and the last reading of ``wall``; first > last in a gap."""
        naive = _naive(wall).replace(tzinfo=self._zone)
        return naive.timestamp(), naive.replace(fold=1).timestamp()

    def _wall_at(self, instant: float) -> int:
        """The local wall time, in local epoch seconds, of a whole-second UTC ``instant``."""
        local = datetime.fromtimestamp(instant, self._zone).replace(tzinfo=None)
        return (local - _EPOCH) // _SECOND

    def _transition(self, before: float, after: float) -> float:
        """The instant in (before, after] from which the UTC offset in force at ``after`` holds."""
        low, high = int(before), int(after)
        offset = self._wall_at(high) - high
        while high - low > 1:
            middle = (low + high) // 2
            if self._wall_at(middle) - middle == offset:
                high = middle
            else:
                low = middle
        return float(high)

    def _fire(self, at: float, note: str | None) -> Fire:
        return Fire(at, datetime.fromtimestamp(at, self._zone), note)

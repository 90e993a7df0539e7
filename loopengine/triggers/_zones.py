"""IANA time zones by name, whatever the name: a folder of the zone database (``America``), a
name too long for a file or a path outside it is no zone, never an ``OSError``."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["time_zone"]


def time_zone(name: str) -> ZoneInfo | None:
    """The zone ``name``; None when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None

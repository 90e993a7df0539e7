"""Durations and percentages as authors write them: ``90s``, ``1h30m``, ``500ms``, ``5%``."""

from __future__ import annotations

import re

__all__ = ["UNIT_SECONDS", "parse_duration"]

UNIT_SECONDS: dict[str, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+")


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``90s`` or ``1h30m``; raises ``ValueError`` otherwise."""
    compact = text.strip().replace(" ", "")
    if not _WHOLE.fullmatch(compact):
        raise ValueError(
            f"invalid duration {text!r}: write a number and a unit (ms, s, m, h, d): 90s, 1h30m"
        )
    return sum(float(n) * UNIT_SECONDS[unit] for n, unit in _PART.findall(compact))

"""Functions added to JMESPath: ``now()``, ``age(ts)``, ``count(x)``, ``matches(s, glob)``,
``lines(text)``."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any

from jmespath import functions

from loopengine.errors import ExpressionError

__all__ = ["LoopFunctions", "arity", "to_epoch"]


def to_epoch(value: str | float) -> float:
    """Seconds since the epoch of a number or an ISO 8601 timestamp (naive means UTC)."""
    if isinstance(value, int | float):
        return float(value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ExpressionError(f"age(): {value!r} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


class LoopFunctions(functions.Functions):
    """JMESPath's built-ins plus the loop helpers; ``now()`` reads the wall clock in seconds."""

    @functions.signature()
    def _func_now(self) -> float:
        return time.time()

    @functions.signature({"types": ["string", "number", "null"]})
    def _func_age(self, timestamp: str | float | None) -> float | None:
        if timestamp is None:
            return None
        return time.time() - to_epoch(timestamp)

    @functions.signature({"types": ["array", "object", "string", "null"]})
    def _func_count(self, value: list[Any] | dict[str, Any] | str | None) -> int:
        return 0 if value is None else len(value)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_matches(self, text: str, pattern: str) -> bool:
        return fnmatchcase(text, pattern)

    @functions.signature({"types": ["string", "null"]})
    def _func_lines(self, text: str | None) -> list[str]:
        """The lines of ``text`` that hold something: a command's output as a list (items).
        Only a newline ends a line (``\r\n`` too): a file name may hold a form feed."""
        if text is None:
            return []
        return [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]


def arity(name: str) -> tuple[int, bool] | None:
    """(number of declared arguments, variadic) of a function, or None when it does not exist."""
    spec = LoopFunctions.FUNCTION_TABLE.get(name)
    if spec is None:
        return None
    signature = spec["signature"]
    return len(signature), bool(signature and signature[-1].get("variadic"))

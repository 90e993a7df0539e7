"""Translate loopengine's expression sugar into standard JMESPath; pure string work.

Outside quoted text: bare numbers become JSON literals (``> 0`` → ``> `0```) except in index and
slice brackets; ``true``, ``false`` and ``null`` are literals; ``5%`` becomes ``0.05``; durations
(``6h``, ``90s``) become seconds; the seed's ``last_run < 6_hours_ago`` becomes
``since_last_run < 6h``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from loopengine.errors import ExpressionError
from loopengine.expr._durations import UNIT_SECONDS

__all__ = ["Rewritten", "rewrite"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INDEX = re.compile(r"\[\s*-?\d+\s*\]|\[\s*-?\d*\s*:\s*-?\d*\s*(?::\s*-?\d*\s*)?\]")
_NUMBER = re.compile(
    r"-?\d+(?:_\d+)*(?:\.\d+)?(?:[eE][+-]?\d+)?(?P<unit>%|ms|s|m|h|d)?(?![A-Za-z0-9_])"
)
_AGO_UNITS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 604800.0}
_AGO = re.compile(r"(\d+(?:\.\d+)?)_(second|minute|hour|day|week)s?_ago(?![A-Za-z0-9_])")
_LAST_RUN_ALIAS = re.compile(r"last_run\s*(<=|>=|<|>)\s*" + _AGO.pattern)
_QUOTES = "'`\""
_KEYWORDS = frozenset({"true", "false", "null"})


@dataclass(frozen=True, slots=True)
class Rewritten:
    """Standard JMESPath text plus a map from its offsets back to the author's columns."""

    text: str
    segments: tuple[tuple[int, int, bool], ...]
    """(offset in ``text``, offset in the source, copied verbatim) for each emitted piece."""

    def source_column(self, position: int) -> int:
        """The 0-based column in the author's text that produced ``position`` of ``text``."""
        out_pos, src_pos, verbatim = 0, 0, True
        for segment in self.segments:
            if segment[0] > position:
                break
            out_pos, src_pos, verbatim = segment
        return src_pos + (position - out_pos if verbatim else 0)


def _quoted_end(source: str, start: int) -> int:
    quote = source[start]
    i = start + 1
    while i < len(source):
        if source[i] == "\\":
            i += 2
            continue
        if source[i] == quote:
            return i + 1
        i += 1
    return len(source)


def _literal(value: float) -> str:
    number = int(value) if float(value).is_integer() and abs(value) < 2**53 else value
    return f"`{json.dumps(number)}`"


def _number_value(text: str, unit: str | None) -> float:
    value = float(text.replace("_", ""))
    if unit == "%":
        return value / 100
    if unit:
        return value * UNIT_SECONDS[unit]
    return value


def rewrite(source: str) -> Rewritten:
    """Return ``source`` as standard JMESPath; raises ``ExpressionError`` for misused sugar."""
    out: list[str] = []
    segments: list[tuple[int, int, bool]] = []
    size = 0
    i = 0

    def emit(text: str, src_pos: int, verbatim: bool = False) -> None:
        nonlocal size
        segments.append((size, src_pos, verbatim))
        out.append(text)
        size += len(text)

    while i < len(source):
        char = source[i]
        if char in _QUOTES:
            end = _quoted_end(source, i)
        elif char == "[" and (index := _INDEX.match(source, i)):
            end = index.end()
        elif alias := _LAST_RUN_ALIAS.match(source, i):
            seconds = float(alias.group(2)) * _AGO_UNITS[alias.group(3)]
            emit(f"since_last_run {alias.group(1)} {_literal(seconds)}", i)
            i = alias.end()
            continue
        elif ident := _IDENT.match(source, i):
            end = ident.end()
            if ident.group() in _KEYWORDS and not source[:i].rstrip().endswith("."):
                emit(f"`{ident.group()}`", i)
                i = end
                continue
        elif ago := _AGO.match(source, i):
            raise ExpressionError(
                f"'{ago.group()}' is only understood as `last_run < N_hours_ago`;"
                " elsewhere write a duration such as `age(ts) > 6h`",
                source,
                i,
            )
        elif (char.isdigit() or (char == "-" and source[i + 1 : i + 2].isdigit())) and (
            number := _NUMBER.match(source, i)
        ):
            unit = number.group("unit")
            text = number.group()[: len(number.group()) - len(unit or "")]
            emit(_literal(_number_value(text, unit)), i)
            i = number.end()
            continue
        else:
            end = i + 1
        emit(source[i:end], i, verbatim=True)
        i = end
    return Rewritten("".join(out), tuple(segments))

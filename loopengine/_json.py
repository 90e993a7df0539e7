"""JSON read from outside the process (an HTTP body, the command line) holds finite numbers only,
and JSON written by it is compact.

``NaN`` and ``Infinity`` are not JSON, though Python reads them, and a number past a float's range
(``1e999``) reads as infinity: no store keeps them (PostgreSQL's JSON refuses them), so they are
refused where they enter, naming where they stand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, TypeAlias

import orjson

__all__ = ["JSON", "JSONObject", "NonFiniteNumber", "dumps", "loads"]

JSON: TypeAlias = "bool | int | float | str | Sequence[JSON] | Mapping[str, JSON] | None"
"""A JSON value as this package writes it (read-only containers, so a ``list[str]`` is one)."""
JSONObject: TypeAlias = "dict[str, JSON]"
"""A JSON object this package builds and hands on (a skill's output, a view the faces print)."""


class _NonFinite:
    """A number read that no float holds, where it stood in the document."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class NonFiniteNumber(ValueError):
    """A document held ``NaN``, ``Infinity`` or a number past ±1.8e308; ``where`` names it
    (``body.inputs.limit``, ``body.items.2``)."""

    def __init__(self, text: str, where: str) -> None:
        said = (
            f"{text} is not a finite number (JSON has no NaN nor Infinity; floats end at 1.8e308)"
        )
        super().__init__(f"{where}: {said}" if where else said)
        self.text, self.where = text, where


def _first(document: Any, root: str) -> tuple[str, str] | None:
    """The text and path of the first non-finite number of ``document``, in document order
    (walked without recursion: a document may nest as deep as the parser allows)."""
    stack: list[tuple[str, Any]] = [(root, document)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, _NonFinite):
            return value.text, where
        if isinstance(value, dict):
            items: list[tuple[Any, Any]] = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        stack.extend((f"{where}.{key}" if where else str(key), v) for key, v in reversed(items))
    return None


def loads(text: str | bytes, root: str = "") -> Any:
    """``text`` read as JSON (``ValueError`` when it is not), with ``NonFiniteNumber`` for a
    number no store keeps; ``root`` names the document in the path an error gives."""
    marked: list[str] = []

    def constant(name: str) -> _NonFinite:
        marked.append(name)
        return _NonFinite(name)

    def number(text: str) -> float | _NonFinite:
        value = float(text)
        return value if math.isfinite(value) else constant(text)

    document = json.loads(text, parse_constant=constant, parse_float=number)
    if marked:
        raise NonFiniteNumber(*(_first(document, root) or (marked[0], root)))
    return document


_OPTIONS = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)
"""Keys of any kind written as text; dataclasses and dates handed to ``default``, as the standard
library's encoder does."""


def dumps(value: Any, default: Callable[[Any], Any] = str) -> str:
    """``value`` as compact JSON (UTF-8 as is), what no JSON type holds as ``default`` makes it.
    orjson writes it (an execution's phases row: 3 µs against the standard library's 62 on a
    2-core machine) as the standard library did but for NaN and infinities (null: JSON has
    none), enumeration members (their value) and the shortest form of some floats (``1e-7``).
    The standard library writes what orjson refuses (integers past 64 bits, nesting past 254
    levels, lone surrogates: escaped), as it always did."""
    try:
        return orjson.dumps(value, default=_as_standard(default), option=_OPTIONS).decode()
    except orjson.JSONEncodeError:
        text = json.dumps(value, separators=(",", ":"), default=default, ensure_ascii=False)
        try:
            text.encode()
        except UnicodeEncodeError:
            return json.dumps(value, separators=(",", ":"), default=default)
        return text


@cache
def _as_standard(default: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``default``, after what the standard library writes as their base type and orjson hands
    over: tuples of a subclass (a named tuple) as lists, floats of a subclass as floats."""

    def plain(value: Any) -> Any:
        if isinstance(value, tuple):
            return list(value)
        if isinstance(value, float):
            return float(value)
        return default(value)

    return plain

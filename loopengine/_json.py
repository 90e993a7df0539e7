"""JSON read from outside the process (an HTTP body, the command line) holds finite numbers only.

``NaN`` and ``Infinity`` are not JSON, though Python reads them, and a number past a float's range
(``1e999``) reads as infinity: no store keeps them (PostgreSQL's JSON refuses them), so they are
refused where they enter, naming where they stand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

__all__ = ["JSON", "JSONObject", "NonFiniteNumber", "loads"]

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

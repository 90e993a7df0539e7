"""What the listing commands share (``events list``, ``metrics list``): a name glob and a bound,
read from the store without writing anything."""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa

from loopengine.errors import ContractError
from loopengine.reader import open_reader

__all__ = ["MAX_LISTED", "Query", "listed"]

MAX_LISTED = 10_000

R = TypeVar("R")
Query = Callable[[sa.Connection, Callable[[str], bool], int], list[R]]
"""A repository function: the first ``limit`` records whose name the predicate accepts."""


def listed(config: Path | None, pattern: str | None, limit: int, query: Query[R]) -> list[R]:
    """At most ``limit`` rows whose name matches ``pattern``."""
    if not 1 <= limit <= MAX_LISTED:
        raise ContractError(f"--limit {limit}: write a whole number from 1 to {MAX_LISTED}")

    def wanted(name: str) -> bool:
        return pattern is None or fnmatchcase(name, pattern)

    with open_reader(config) as reader:
        return reader.read(lambda c: query(c, wanted, limit))

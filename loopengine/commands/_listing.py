"""What the listing commands share (``events list``, ``metrics list``): a name glob and a bound,
checked before the store is read."""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from loopengine.app import MAX_LISTED
from loopengine.errors import ContractError

__all__ = ["MAX_LISTED", "name_filter"]


def name_filter(pattern: str | None, limit: int) -> Callable[[str], bool]:
    """Whether a name matches ``pattern`` (any name without one), once ``limit`` is checked:
    what a listing passes to its repository function with ``limit``."""
    if not 1 <= limit <= MAX_LISTED:
        raise ContractError(f"--limit {limit}: write a whole number from 1 to {MAX_LISTED}")

    def wanted(name: str) -> bool:
        return pattern is None or fnmatchcase(name, pattern)

    return wanted

"""The comparison operators of loop files, one table for every place that compares a value with a
threshold (success criteria, threshold triggers); the contract's ``Operator`` names the same."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["COMPARISONS"]

COMPARISONS: Mapping[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}

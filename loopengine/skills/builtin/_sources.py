"""The built-in detect source types: what each reads and what its ``name``/``filter`` mean."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["SOURCE_TYPES"]

SOURCE_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "metric": "points of the metric series `name` from the metrics store",
        "event": "recent events whose name matches `name`",
        "log": "lines of the log file `name` (or `audit`), `filter` a substring",
        "alert": "threshold triggers currently firing whose metric matches `name`",
        "database": "read-only SELECT on table `name` of the configured database, WHERE `filter`",
    }
)

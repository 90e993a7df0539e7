"""The execution context: namespaces each phase writes, plus skill outputs merged at the root."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RESERVED", "deep_merge", "publish", "set_path"]

RESERVED = frozenset(
    {
        "loop",
        "trigger",
        "job",
        "input",
        "last_run",
        "since_last_run",
        "state",
        "detect",
        "analysis",
        "confidence",
        "decision",
        "act",
        "validate",
        "learn",
        "now",
        "item",
        "batch",
        "context",
    }
)


def deep_merge(target: dict[str, Any], update: Mapping[str, Any]) -> None:
    """Merge ``update`` into ``target`` in place: mappings merge key by key, anything else wins."""
    for key, value in update.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            deep_merge(current, value)
        elif isinstance(value, Mapping):
            target[key] = _copy(value)
        else:
            target[key] = value


def _copy(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _copy(v) if isinstance(v, Mapping) else v for k, v in value.items()}


def publish(data: dict[str, Any], output: Any) -> None:
    """Deep-merge a skill's mapping output into the root, leaving the reserved namespaces alone."""
    if isinstance(output, Mapping):
        deep_merge(data, {k: v for k, v in output.items() if k not in RESERVED})


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``a.b.c`` in ``data``, creating mappings on the way."""
    *parents, last = path.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[last] = value

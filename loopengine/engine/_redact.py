"""Keep secret values out of everything persisted or printed."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["MASK", "redact"]

MASK = "***"


def redact(value: Any, secrets: Collection[str]) -> Any:
    """``value`` with every occurrence of a secret replaced by ``***`` (a copy when anything is)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if secret:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    return value

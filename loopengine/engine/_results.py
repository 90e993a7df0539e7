"""What an action call returned, as its record and ``act.<action_id>.result`` keep it; pure."""

from __future__ import annotations

from typing import Any

from loopengine._json import dumps

__all__ = ["MAX_RESULT_BYTES", "kept"]

MAX_RESULT_BYTES = 16 * 1024
"""Most of a call's result kept, measured as JSON (UTF-8)."""


def kept(value: Any) -> Any:
    """``value`` itself when it takes at most ``MAX_RESULT_BYTES`` as JSON; else the start of its
    JSON text, cut so that the whole, marker included, still does, ending with ``… [cut: …]``."""
    try:
        text = dumps(value)
    except (ValueError, RecursionError) as exc:  # a circular or very deep value
        return f"[not kept: the result cannot be written as JSON ({type(exc).__name__})]"
    total = len(text.encode())
    if total <= MAX_RESULT_BYTES:
        return value
    marker = f"… [cut: {total:,} bytes as JSON, the first {{kept:,}} kept]"
    head = text.encode()[:MAX_RESULT_BYTES].decode(errors="ignore")
    while True:
        cut = head + marker.format(kept=len(head.encode()))
        over = len(dumps(cut).encode()) - MAX_RESULT_BYTES
        if over <= 0:
            return cut
        head = head[: len(head) - over]

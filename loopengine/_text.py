"""What reading a model's text needs wherever it is read (autolearn, the corrective pipeline):
its reasoning block dropped, control characters found; pure."""

from __future__ import annotations

import re

__all__ = ["CONTROL", "drop_think"]

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters, newline and tab aside."""
_THINK = re.compile(r"\A\s*<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


def drop_think(text: str) -> str:
    """``text`` without a leading ``<think>`` block (one never closed takes all the rest)."""
    return _THINK.sub("", text, count=1)

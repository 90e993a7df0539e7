"""What the console draws on the server: a series as the points of an SVG polyline, a loop file's
lines split into keys, comments and the rest (the template escapes each part), and the change an
autolearn history entry made to a category's instructions as a diff."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loopengine.store.autolearn import HistoryEntry

__all__ = [
    "HEIGHT",
    "WIDTH",
    "Token",
    "highlighted",
    "instructions_diffs",
    "polyline",
]

WIDTH = 120
HEIGHT = 28
"""The box every series is drawn in (its ``viewBox``)."""
_KEY = re.compile(r"^(\s*(?:-\s+)?)([A-Za-z0-9_.$/-]+|\"[^\"]*\"|'[^']*')(:)(?=\s|$)")


def polyline(values: Sequence[float], low: float | None = None, high: float | None = None) -> str:
    """``values`` (oldest first) as the ``points`` of a polyline across ``WIDTH`` × ``HEIGHT``,
    scaled between ``low`` and ``high`` (their own least and greatest when not given); numbers
    only, so the attribute holds nothing else. A value that is not finite is left out."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    bottom = min(finite) if low is None else low
    top = max(finite) if high is None else high
    span = top - bottom or 1.0
    step = WIDTH / max(len(finite) - 1, 1)
    points = []
    for index, value in enumerate(finite):
        share = min(max((value - bottom) / span, 0.0), 1.0)
        points.append(f"{index * step:.1f},{(1 - share) * (HEIGHT - 2) + 1:.1f}")
    return " ".join(points)


@dataclass(frozen=True, slots=True)
class Token:
    """A part of a line of YAML and what it is: ``key``, ``comment`` or ``text``."""

    kind: str
    text: str


def highlighted(text: str) -> list[list[Token]]:
    """Each line of ``text`` as its parts: a whole-line comment, or a mapping key at its start
    and the rest of the line."""
    lines = []
    for line in text.splitlines():
        found = _KEY.match(line)
        if line.lstrip().startswith("#"):
            parts = [Token("comment", line)]
        elif found:
            parts = [
                Token("text", found.group(1)),
                Token("key", found.group(2)),
                Token("text", line[found.end(2) :]),
            ]
        else:
            parts = [Token("text", line)]
        lines.append([part for part in parts if part.text])
    return lines


def instructions_diffs(entries: Iterable[HistoryEntry]) -> dict[int, list[str]]:
    """For each ``prompt`` entry of the autolearn history whose parent version's text the history
    still holds, the unified diff from that text to the new one, by entry id."""
    texts: dict[tuple[str | None, Any], str] = {}
    prompts: list[tuple[HistoryEntry, str]] = []
    for entry in entries:
        text = entry.detail.get("text")
        if entry.kind == "prompt" and isinstance(text, str):
            prompts.append((entry, text))
            texts[entry.category, entry.detail.get("to")] = text
    diffs = {}
    for entry, text in prompts:
        before = texts.get((entry.category, entry.detail.get("from")))
        if before is not None:
            lines = difflib.unified_diff(
                before.splitlines(),
                text.splitlines(),
                f"version {entry.detail.get('from')}",
                f"version {entry.detail.get('to')}",
                lineterm="",
            )
            diffs[entry.id] = list(lines)
    return diffs

"""'Did you mean' hints for names that resolve nowhere; pure."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

__all__ = ["did_you_mean", "hint", "within_two_edits"]

_MAX_LISTED = 12


def hint(name: str, known: Iterable[str]) -> str:
    """``did you mean 'x'?`` when a close name exists, else ``known: a, b, …``; '' when none."""
    candidates = sorted(set(known))
    if not candidates:
        return ""
    close = get_close_matches(name, candidates, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    listed = ", ".join(candidates[:_MAX_LISTED])
    more = f", … ({len(candidates) - _MAX_LISTED} more)" if len(candidates) > _MAX_LISTED else ""
    return f"known: {listed}{more}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean 'x'?`` when a close name exists, else ''."""
    close = get_close_matches(name, sorted(set(known)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def within_two_edits(name: str, other: str) -> bool:
    """Whether ``name`` becomes ``other`` by at most two insertions, deletions, substitutions or
    swaps of adjacent characters (a typo), ``name`` itself excluded."""
    if name == other or abs(len(name) - len(other)) > 2:
        return False
    previous2: list[int] = []
    previous = list(range(len(other) + 1))
    for i, a in enumerate(name, 1):
        current = [i]
        for j, b in enumerate(other, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == other[j - 2] and name[i - 2] == b:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1] <= 2

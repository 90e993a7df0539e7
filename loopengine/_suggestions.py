"""'Did you mean' hints for names that resolve nowhere; pure."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

__all__ = ["did_you_mean", "hint"]

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

"""How an unexpected error reads where it is caught at the edge of one unit of work (a job, a
request, a daemon task): one line, its traceback left to ``--debug``."""

from __future__ import annotations

__all__ = ["BACKOFF_MAX_S", "describe", "next_pause"]

BACKOFF_MAX_S = 30.0
"""The longest pause between two tries of a task that keeps failing (claims, supervised tasks)."""


def describe(exc: BaseException) -> str:
    """An unexpected error on one line, for a log or a failed job: its type, then the first
    line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def next_pause(last: float | None) -> float:
    """The pause before the next try of a task that keeps failing: 1 s after its first failure,
    then twice the last pause, at most ``BACKOFF_MAX_S``."""
    return 1.0 if last is None else min(last * 2, BACKOFF_MAX_S)

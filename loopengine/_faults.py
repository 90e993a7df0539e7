"""How an unexpected error reads where it is caught at the edge of one unit of work (a job, a
request, a daemon task): one line, its traceback left to ``--debug``."""

from __future__ import annotations

__all__ = ["describe"]


def describe(exc: BaseException) -> str:
    """An unexpected error on one line, for a log or a failed job: its type, then the first
    line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__

"""Waiting in tests: poll for the condition itself, with a deadline generous enough for a loaded
machine, never sleep for a time that is usually long enough."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["DEADLINE_S", "wait_until"]

DEADLINE_S = 60.0
"""How long a test waits for what should happen in well under a second on an idle machine."""

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    failure: str | Callable[[], str],
    *,
    deadline_s: float = DEADLINE_S,
    every_s: float = 0.05,
) -> T:
    """The first true value ``condition`` returns; ``AssertionError(failure)`` if none comes
    within ``deadline_s`` (``failure`` may be a function, to describe the state at that moment)."""
    deadline = time.monotonic() + deadline_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            said = failure if isinstance(failure, str) else failure()
            raise AssertionError(f"{said} (waited {deadline_s:.0f} s)")
        time.sleep(every_s)
    return found

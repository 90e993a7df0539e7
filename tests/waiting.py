"""Waiting in tests: poll for the condition itself, with a deadline generous enough for a loaded
machine, never sleep for a time that is usually long enough."""

from __future__ import annotations

import select
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa

__all__ = ["DEADLINE_S", "alive", "next_line", "wait_until", "wait_until_blocked"]

DEADLINE_S = 60.0
"""How long a test waits for what should happen in well under a second on an idle machine."""

T = TypeVar("T")


def next_line(process: subprocess.Popen[str], timeout_s: float = 30) -> str:
    """The next line ``process`` prints, once it prints it (a failure after ``timeout_s``)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    assert ready, f"nothing printed within {timeout_s:.0f} s"
    return process.stdout.readline()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is dead): a process
    killed a moment ago may not have been scheduled to die yet, so poll for it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


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


def wait_until_blocked(engine: sa.Engine, writer: threading.Thread) -> None:
    """Until ``writer`` waits on a lock another transaction holds in ``engine``'s PostgreSQL
    database, or has ended without waiting."""
    query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")

    def blocked() -> bool:
        with engine.connect() as connection:
            return connection.execute(query).scalar_one() > 0 or not writer.is_alive()

    wait_until(blocked, "the second writer neither waited on the first nor ended", every_s=0.01)

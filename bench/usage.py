"""What the benches print beside their figures: the machine's load, each side's CPU time, and
percentiles."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages and the cores they share (a bench on a loaded
    machine says so beside its figures)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def cpu_seconds(pid: int) -> float:
    """User and system CPU time process ``pid`` has used so far, all its threads (from
    ``/proc``, in clock ticks of 10 ms)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


@dataclass(slots=True)
class Spent:
    """Wall and CPU seconds of a stretch of this process (CPU: every thread of it)."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def spent() -> Iterator[Spent]:
    """Measure the ``with`` block's wall and CPU time into the ``Spent`` it yields."""
    measured = Spent()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield measured
    finally:
        measured.wall = time.perf_counter() - wall
        measured.cpu = time.process_time() - cpu

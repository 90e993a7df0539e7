"""The garbage collector's pace around start-up.

Start-up allocates several hundred thousand objects that live as long as the process (modules,
classes, pydantic validators); collecting young objects every 700 allocations scans them again
and again and costs a short command a quarter of its time. So the command line starts with rare
collections; a command that runs loops settles once its runtime is open: what start-up built is
frozen out of the collector's sight and collections return to their usual pace.
"""

from __future__ import annotations

import gc

__all__ = ["settle", "start_quickly"]

_START_UP = (100_000, 50, 100)
_STEADY = gc.get_threshold()


def start_quickly() -> None:
    """Rare collections: for the command line's entry point, before any import."""
    gc.set_threshold(*_START_UP)


def settle() -> None:
    """Freeze what start-up built and return to the usual pace; nothing when the process did
    not start quickly (a program or a test calling the commands in-process)."""
    if gc.get_threshold() == _START_UP:
        gc.freeze()
        gc.set_threshold(*_STEADY)

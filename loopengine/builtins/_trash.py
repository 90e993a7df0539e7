"""The file actions' trash, kept bounded: a call's folder goes once its record is older than
``actions.trash_days``, unless its execution has not finished (it may still roll the call back).
The file actions prune it themselves, at most once an hour, so a loop run by ``run`` keeps it
bounded as the daemon does, and a call pays for a prune only when one is due."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PRUNE_EVERY_S", "TrashEntry", "due", "expired", "prune"]

PRUNE_EVERY_S = 3600.0
"""How often the trash is pruned at most."""

_DAY_S = 86_400.0
_RECORD = "record.json"
_MARK = ".pruned"
_GONE = ".gone-"
_CALL = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class TrashEntry:
    """One call's folder: when its record was written (None: the call stopped half way, and only
    a person can tell where what it holds belongs) and the execution the record names."""

    name: str
    recorded_at: float | None
    execution_id: str | None = None


def due(last: float | None, now: float) -> bool:
    """Whether a prune is due: none yet, the last over ``PRUNE_EVERY_S`` ago, or in the future
    (a clock set back)."""
    return last is None or not 0 <= now - last < PRUNE_EVERY_S


def expired(
    entries: Iterable[TrashEntry], now: float, keep_days: float, unfinished: Collection[str]
) -> list[TrashEntry]:
    """The entries recorded more than ``keep_days`` before ``now`` whose execution is not among
    ``unfinished`` (running, interrupted or waiting executions may still roll back)."""
    before = now - keep_days * _DAY_S
    return [
        entry
        for entry in entries
        if entry.recorded_at is not None
        and entry.recorded_at < before
        and entry.execution_id not in unfinished
    ]


def prune(
    trash: Path,
    now: float,
    keep_days: float,
    unfinished: Callable[[list[str]], Collection[str]],
) -> list[str]:
    """Remove the expired entries of ``trash`` when a prune is due (``unfinished`` says which of
    the executions it is given have not finished); the names removed."""
    mark = trash / _MARK
    try:
        last: float | None = mark.stat().st_mtime
    except FileNotFoundError:
        last = None
    if not trash.is_dir() or not due(last, now):
        return []
    mark.touch()
    os.utime(mark, (now, now))
    aged = expired(_entries(trash), now, keep_days, ())
    named = sorted({entry.execution_id for entry in aged if entry.execution_id is not None})
    gone = expired(aged, now, keep_days, unfinished(named) if named else ())
    for entry in gone:
        _remove(trash / entry.name)
    for left in trash.glob(f"{_GONE}*"):
        shutil.rmtree(left, ignore_errors=True)
    return [entry.name for entry in gone]


def _entries(trash: Path) -> Iterator[TrashEntry]:
    with os.scandir(trash) as found:
        for item in found:
            if _CALL.fullmatch(item.name) and item.is_dir(follow_symlinks=False):
                yield _entry(Path(item.path))


def _entry(folder: Path) -> TrashEntry:
    """The entry in ``folder``; one without a readable record is taken as stopped half way."""
    try:
        with open(folder / _RECORD, "rb") as stream:
            recorded_at = os.fstat(stream.fileno()).st_mtime
            record = json.load(stream)
    except (OSError, ValueError):
        return TrashEntry(folder.name, None)
    execution = record.get("execution") if isinstance(record, dict) else None
    return TrashEntry(folder.name, recorded_at, execution if isinstance(execution, str) else None)


def _remove(folder: Path) -> None:
    """Renamed first, so its call's key finds no record rather than a call stopped half way,
    and a prune running at the same time does not remove it too; then removed."""
    gone = folder.with_name(f"{_GONE}{folder.name}")
    try:
        os.rename(folder, gone)
    except OSError:
        return
    shutil.rmtree(gone, ignore_errors=True)

"""The state of the daemons as ``status`` and the HTTP API show it (read-only)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from loopengine._json import JSONObject
from loopengine.store import executions, queue
from loopengine.store._record import ExecutionRow, iso

__all__ = ["ServedLoop", "ShownTrigger", "View", "next_fire", "served", "view"]


@dataclass(frozen=True, slots=True)
class ShownTrigger:
    """A served trigger as ``status`` shows it: its next fire after now, not its upcoming
    slots."""

    id: str
    type: str
    next_fire: float | None

    def as_json(self) -> JSONObject:
        return {"id": self.id, "type": self.type, "next_fire": iso(self.next_fire)}


@dataclass(frozen=True, slots=True)
class ServedLoop:
    """A loop a running daemon serves: its file, its triggers, and since when it is paused, if
    it is."""

    loop_id: str
    file: str
    triggers: tuple[ShownTrigger, ...]
    paused_at: float | None

    def as_json(self) -> JSONObject:
        """One loop of ``GET /loops`` and ``status --json``."""
        return {
            "loop_id": self.loop_id,
            "file": self.file,
            "triggers": [trigger.as_json() for trigger in self.triggers],
            "paused": self.paused_at is not None,
            "paused_at": iso(self.paused_at),
        }


@dataclass(frozen=True, slots=True)
class View:
    """The daemons alive, the loops they serve, the executions running, the queue's depth."""

    daemons: list[queue.Daemon]
    loops: list[ServedLoop]
    running: list[ExecutionRow]
    depth: dict[str, int]
    """Jobs ``queued`` and ``running``."""

    def as_json(self) -> JSONObject:
        """What ``loopengine status --json`` and ``GET /status`` show."""
        return {
            "daemons": [
                {
                    "id": d.id,
                    "host": d.host,
                    "pid": d.pid,
                    "started_at": iso(d.started_at),
                    "heartbeat_at": iso(d.heartbeat_at),
                }
                for d in self.daemons
            ],
            "loops": [loop.as_json() for loop in self.loops],
            "running": [
                {
                    "execution_id": row.id,
                    "loop_id": row.loop_id,
                    "started_at": iso(row.started_at),
                    "last_phase": row.last_phase,
                }
                for row in self.running
            ],
            "queue": self.depth,
        }


def view(connection: sa.Connection, since: float) -> View:
    """The daemons whose heartbeat is newer than ``since``, each loop they serve (``served``),
    the executions running, the queue's depth."""
    daemons = queue.active_daemons(connection, since)
    return View(
        daemons,
        _loops(connection, daemons),
        executions.running_executions(connection),
        queue.queue_depth(connection),
    )


def served(connection: sa.Connection, since: float) -> list[ServedLoop]:
    """Each loop the daemons whose heartbeat is newer than ``since`` serve, with its triggers'
    next fires and pause state (``GET /loops``)."""
    return _loops(connection, queue.active_daemons(connection, since))


def next_fire(slots: Sequence[float], now: float) -> float | None:
    """The first of a trigger's upcoming ``slots`` (a daemon's row) after ``now``: the row is
    written every third of a lease, and its first slot may have passed since; the last one when
    all have (the daemon is late)."""
    return next((slot for slot in slots if slot > now), slots[-1] if slots else None)


def _loops(connection: sa.Connection, daemons: list[queue.Daemon]) -> list[ServedLoop]:
    paused, now = queue.paused(connection), time.time()
    loops: dict[str, queue.Served] = {}
    for daemon in daemons:
        for loop in daemon.loops:
            loops.setdefault(loop.loop_id, loop)
    return [
        ServedLoop(
            loop_id,
            loop.file,
            tuple(ShownTrigger(t.id, t.type, next_fire(t.next_fires, now)) for t in loop.triggers),
            paused.get(loop_id),
        )
        for loop_id, loop in sorted(loops.items())
    ]

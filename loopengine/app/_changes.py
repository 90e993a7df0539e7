"""Which executions changed, told to whoever follows them (the console's live pages) as soon as
a commit of this process is durable (the engine's commit listener), and within a second of one
by another process (one shared look at the store, only while someone follows)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import anyio

from loopengine.app._operations import history, perform
from loopengine.store import ExecutionRow, Store
from loopengine.store.executions import Narrowed

__all__ = ["REFRESH", "Change", "Changes", "Follower", "moved"]

REFRESH = "refresh"
"""What a change is when the follower missed some: read everything again."""
POLL_S = 1.0
"""How often the store is looked at for commits of other processes."""
_LOOKED_AT = 50
"""Newest and running executions the look at the store compares."""

Seen = Mapping[str, tuple[str, str | None, str | None]]
"""Each execution looked at: its status, last phase and outcome."""


@dataclass(frozen=True, slots=True)
class Change:
    """The ``seq``-th change: what became of an execution (a phase's name, ``started``,
    ``waiting``, ``finished``) or ``refresh`` for any of them (``execution_id`` None)."""

    seq: int
    execution_id: str | None
    what: str

    def data(self) -> str:
        return json.dumps({"execution": self.execution_id, "what": self.what})


class Follower:
    """The changes one reader has yet to take, at most ``limit``: a reader that falls behind by
    more is dropped (``dropped``), to read everything again when it comes back."""

    def __init__(self, execution_id: str | None, limit: int) -> None:
        self.execution_id, self.limit = execution_id, limit
        self.pending: deque[Change] = deque()
        self.dropped = False
        self.closed = False
        self._ready = anyio.Event()

    def offer(self, change: Change) -> None:
        if self.execution_id is not None and change.execution_id not in (None, self.execution_id):
            return
        if len(self.pending) >= self.limit:
            self.dropped = True
        else:
            self.pending.append(change)
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def taken(self, within_s: float) -> list[Change]:
        """The changes arrived, waiting up to ``within_s`` for one (none: nothing changed)."""
        with anyio.move_on_after(within_s):
            await self._ready.wait()
        self._ready = anyio.Event()
        taken = list(self.pending)
        self.pending.clear()
        return taken


def moved(before: Seen, after: Seen) -> set[str]:
    """The executions that started, moved on or left the ones looked at between two looks."""
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def _seen(rows: list[ExecutionRow]) -> dict[str, tuple[str, str | None, str | None]]:
    return {row.id: (row.status, row.last_phase, row.outcome) for row in rows}


class Changes:
    """The changes of executions, numbered, handed to each follower."""

    def __init__(self) -> None:
        self.seq = 0
        self.followers: set[Follower] = set()
        self._told: set[str] = set()
        self._followed = anyio.Event()

    def committed(self, execution_id: str, what: str) -> None:
        """The engine's commit listener: ``execution_id``'s ``what`` is durable."""
        self._told.add(execution_id)
        self._tell(execution_id, what)

    def _tell(self, execution_id: str | None, what: str) -> None:
        self.seq += 1
        change = Change(self.seq, execution_id, what)
        for follower in self.followers:
            follower.offer(change)

    @contextmanager
    def following(self, execution_id: str | None, limit: int) -> Iterator[Follower]:
        """A follower of ``execution_id``'s changes (of every execution's when None), for the
        block."""
        follower = Follower(execution_id, limit)
        self.followers.add(follower)
        self._followed.set()
        try:
            yield follower
        finally:
            self.followers.discard(follower)

    def close(self) -> None:
        """End every follower: the daemon stops."""
        for follower in self.followers:
            follower.close()

    async def watch(self, store: Store, every_s: float = POLL_S) -> None:
        """Tell what other processes committed, looking at the newest and the running
        executions every ``every_s`` while anyone follows (SQLite: only when another connection
        committed since the last look)."""
        before: Seen | None = None
        version: int | None = None
        while True:
            if not self.followers:
                before, self._followed = None, anyio.Event()
                await self._followed.wait()
            now_version = store.data_version()
            if before is None or now_version is None or now_version != version:
                version = now_version
                newest = await perform(store, history(None, None, _LOOKED_AT))
                running = Narrowed(status="running")
                unfinished = await perform(store, history(None, None, _LOOKED_AT, None, running))
                after = _seen([*newest.rows, *unfinished.rows])
                if before is not None:
                    for execution_id in sorted(moved(before, after) - self._told):
                        self._tell(execution_id, REFRESH)
                before = after
                self._told.clear()
            await anyio.sleep(every_s)

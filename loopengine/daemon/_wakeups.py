"""How the daemon hears of work written elsewhere: the store's notifications (``wakeups``) on
PostgreSQL, SQLite's ``data_version`` (another process committed) read every ``poll_s``, and
this process's own writes told by the store at commit. Idle parts then look at the store only
every ``FALLBACK_S`` (or ``poll_s`` if longer; jittered, so daemons do not poll in step), for
what no notification says: a lease that lapsed, a notification lost. While PostgreSQL's
listening connection is down they poll every ``poll_s`` instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import anyio

from loopengine._faults import describe
from loopengine.daemon._log import DaemonLog
from loopengine.store import Store
from loopengine.store.wakeups import TOPICS, connector, listen

__all__ = ["FALLBACK_S", "JITTER", "Wakeups", "jittered"]

FALLBACK_S = 5.0
"""How often idle parts look at the store while notifications arrive."""
JITTER = 0.2
"""Each wait is this share longer or shorter, at random."""


def jittered(period: float, draw: Callable[[float, float], float] = random.uniform) -> float:
    """``period`` made up to ``JITTER`` longer or shorter."""
    return period * draw(1 - JITTER, 1 + JITTER)


class Wakeups:
    """Tells each topic's handler (``handlers``) that work may wait; ``period`` is how long an
    idle part waits for one before looking at the store anyway."""

    def __init__(self, store: Store, log: DaemonLog, poll_s: float) -> None:
        self.store = store
        self.log = log
        self.poll_s = poll_s
        self.handlers: dict[str, Callable[[], None]] = {}
        self.listening = False
        self._failed = False
        store.on_notified = self.tell

    def tell(self, topic: str) -> None:
        """Wake the handler of ``topic`` (one not known is ignored: anyone may notify)."""
        if (handler := self.handlers.get(topic)) is not None:
            handler()

    def period(self) -> float:
        return jittered(max(FALLBACK_S, self.poll_s) if self.listening else self.poll_s)

    async def run(self) -> None:
        connect = connector(self.store.engine)
        if connect is None:
            await self._watch_versions()
        else:
            await listen(connect, self.tell, self._listening, lambda: self.store.backend_pid)

    def _listening(self, error: BaseException | None) -> None:
        """Note whether notifications arrive; say once when they stop, and when they are back."""
        if error is None and self._failed:
            self.log.line("wakeups", "notifications arrive again")
        elif error is not None and not self._failed:
            text = f"cannot listen for notifications ({describe(error)}): polling every "
            self.log.line("wakeups", f"{text}{self.poll_s:g} s until they are back")
        self._failed = error is not None
        self.listening = error is None

    async def _watch_versions(self) -> None:
        """Tell every topic when another process committed (SQLite's ``data_version`` moved),
        looked at every ``poll_s``."""
        seen = self.store.data_version()
        self.listening = True
        while True:
            await anyio.sleep(self.poll_s)
            version = self.store.data_version()
            if version is not None and version != seen:
                seen = version
                for topic in TOPICS:
                    self.tell(topic)

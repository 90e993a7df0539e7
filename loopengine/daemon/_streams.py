"""Redis Streams as event sources: entries read in a consumer group are appended to the event log
(``source: redis``) and acknowledged only once committed, so a daemon that dies in between loses
none: restarted, it reads its own unacknowledged entries first, and another daemon claims them
(``XAUTOCLAIM``) once they have waited ``claim_idle_s``. An entry appended is held in the store
until it is acknowledged and an hour more, so a second delivery of it appends nothing. A bad
entry (no event name, data not JSON or too big) is logged and acknowledged, never retried. Redis
out of reach is said once, waited out and said again when it answers: other loops never wait for
it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from loopengine._faults import next_pause
from loopengine.contract import RedisStream
from loopengine.daemon._log import DaemonLog
from loopengine.store import Store, async_redis_client, redis_failure, shown_url, signals
from loopengine.triggers import stream_entry_event

__all__ = ["ACKNOWLEDGED_HOLD_S", "BLOCK_S", "HOLD_S", "StreamReader"]

BLOCK_S = 2.0
"""How long one read waits for new entries."""
HOLD_S = 30 * 86_400.0
"""How long an appended entry is held against a second delivery when it is never acknowledged."""
ACKNOWLEDGED_HOLD_S = 3_600.0
"""How long an acknowledged entry is still held (at least twice ``claim_idle_s``): a delivery
under way when it was acknowledged (another consumer's claim, a write waiting out a store outage)
appends nothing either."""

Entries = Sequence[tuple[bytes, dict[bytes, bytes] | None]]


class StreamReader:
    """Reads one stream into the event log for as long as the daemon runs."""

    def __init__(
        self,
        source: RedisStream,
        consumer: str,
        store: Store,
        log: DaemonLog,
        on_appended: Callable[[], None],
    ) -> None:
        self.source = source
        self.consumer = consumer
        self.store = store
        self.log = log
        self.on_appended = on_appended
        self.fields = {"stream": source.stream, "redis": shown_url(source.url)}
        scope = f"{shown_url(source.url)}\n{source.stream}\n{source.group}".encode()
        self.prefix = f"redis:{hashlib.sha256(scope).hexdigest()[:32]}:"
        self.released: list[str] = []
        self.down: float | None = None
        """The pause before the next try while Redis is out of reach; None while it answers."""
        self.client = async_redis_client(source.url, BLOCK_S)
        """Made here so that a daemon without redis-py refuses to start, saying what to install;
        made again by each ``run``, which closes it."""

    async def run(self) -> None:
        """Read until cancelled; Redis out of reach is waited out, with a line when it goes and
        one when it answers again."""
        self.client = async_redis_client(self.source.url, BLOCK_S)
        try:
            while True:
                try:
                    await self._follow()
                except _Unreachable as exc:
                    if self.down is None:
                        self.log.line("error", f"{exc}: retrying until it answers", **self.fields)
                    self.down = next_pause(self.down)
                    await anyio.sleep(self.down)
        finally:
            with anyio.CancelScope(shield=True):
                await self.client.aclose()

    async def _follow(self) -> None:
        """Read this consumer's own unacknowledged entries, then new ones, claiming others'
        left idle every ``claim_idle_s / 2``."""
        await self._command(self._join())
        while own := await self._command(self._read("0", None)):
            await self._take(own)
        if self.down is not None:
            self.log.line("redis", "answers again", **self.fields)
            self.down = None
        claimed_at = -float("inf")
        while True:
            if time.monotonic() - claimed_at >= self.source.claim_idle_s / 2:
                await self._claim()
                claimed_at = time.monotonic()
            if fresh := await self._command(self._read(">", int(BLOCK_S * 1000))):
                await self._take(fresh)

    async def _join(self) -> None:
        """Make the group at the stream's end, unless it is there."""
        import redis

        try:
            await self.client.xgroup_create(
                self.source.stream, self.source.group, id="$", mkstream=True
            )
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _read(self, start: str, block: int | None) -> Entries:
        answer: Any = await self.client.xreadgroup(
            self.source.group,
            self.consumer,
            {self.source.stream: start},
            count=self.source.batch,
            block=block,
        )
        return list(answer[0][1]) if answer else []

    async def _claim(self) -> None:
        """Take over what other consumers read and left unacknowledged for ``claim_idle_s``."""
        start = "0-0"
        while True:
            answer = await self._command(
                self.client.xautoclaim(
                    self.source.stream,
                    self.source.group,
                    self.consumer,
                    int(self.source.claim_idle_s * 1000),
                    start_id=start,
                    count=self.source.batch,
                )
            )
            start, entries = answer[0], answer[1]
            if entries:
                await self._take(entries)
            if start == b"0-0":
                return

    async def _take(self, entries: Entries) -> None:
        """Append the good entries in one transaction, log the bad ones, then acknowledge all."""
        keyed: list[tuple[str, str, Any]] = []
        for entry_id, fields in entries:
            found = stream_entry_event(fields)
            if isinstance(found, str):
                said = f"entry {entry_id.decode()} refused: {found}; acknowledged, not retried"
                self.log.line("error", said, **self.fields)
            else:
                keyed.append((self.prefix + entry_id.decode(), *found))
        now = time.time()
        acknowledged = now + max(ACKNOWLEDGED_HOLD_S, 2 * self.source.claim_idle_s)
        appended = await self.store.write(
            signals.insert_events_once,
            keyed,
            "redis",
            now,
            now + HOLD_S,
            self.released,
            acknowledged,
        )
        self.released = []
        ids = [entry_id for entry_id, _ in entries]
        await self._command(self.client.xack(self.source.stream, self.source.group, *ids))
        self.released = [key for key, _, _ in keyed]
        if appended:
            self.on_appended()

    async def _command(self, pending: Any) -> Any:
        """The answer of one awaited Redis command; its failure as ``_Unreachable``."""
        import redis

        try:
            return await pending
        except redis.RedisError as exc:
            raise _Unreachable(redis_failure(self.source.url, exc)) from None


class _Unreachable(Exception):
    """A Redis command failed (the store's failures are not this)."""

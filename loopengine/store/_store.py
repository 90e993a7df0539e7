"""The store: one writer thread owns the connection, so transactions never interleave.

Every operation is a plain function of a SQLAlchemy ``Connection``, queued to that thread and run
in a transaction (``BEGIN IMMEDIATE`` on SQLite). Writes that queue up while the thread is busy
are committed together (group commit: one fsync for many executions' phase rows); should the
group fail, each write is retried alone so only the faulty one fails. Operations run in the
order they were submitted, so a read sees every write submitted before it. A cancelled caller
does not cancel a write already queued: its outcome is unknown to that caller, which is why
executions carry idempotency keys.

Why a thread and a synchronous engine rather than SQLAlchemy's async engine over aiosqlite: that
adapter hops threads for every cursor call (~4 per statement), and a 1 + 7 row transaction took
~2.1 ms on a 2-core machine against ~0.25 ms for the same rows batched in one hop.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store._database import WRITER, create_engine
from loopengine.store._migrations import migrate

__all__ = ["Store"]

T = TypeVar("T")
_GROUP_LIMIT = 64


@dataclass(slots=True)
class _Job:
    operation: Callable[[sa.Connection], Any]
    writer: bool
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


def _settle(job: _Job, value: Any, error: BaseException | None) -> None:
    def settle() -> None:
        if job.future.done():
            return
        if error is None:
            job.future.set_result(value)
        else:
            job.future.set_exception(error)

    with contextlib.suppress(RuntimeError):
        job.loop.call_soon_threadsafe(settle)


def _translated(exc: BaseException) -> BaseException:
    if isinstance(exc, sa.exc.SQLAlchemyError):
        return StorageError(f"database error: {getattr(exc, 'orig', None) or exc}")
    return exc


class Store:
    """Async access to the database through a single serialising worker thread."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="loopengine-store", daemon=True)
        self._thread.start()

    @classmethod
    async def open(cls, url: str) -> Store:
        """Connect to ``url`` and migrate its schema to the latest version."""
        store = cls(create_engine(url))
        try:
            await store.write(migrate)
        except BaseException:
            await store.close()
            raise
        return store

    def _next_group(self, first: _Job) -> tuple[list[_Job], _Job | None, bool]:
        """``first`` plus the writes queued right behind it; then what came next, and stop?"""
        group = [first]
        while first.writer and len(group) < _GROUP_LIMIT:
            try:
                following = self._jobs.get_nowait()
            except queue.Empty:
                break
            if following is None:
                return group, None, True
            if not following.writer:
                return group, following, False
            group.append(following)
        return group, None, False

    def _fail_all(self, error: BaseException) -> None:
        while (job := self._jobs.get()) is not None:
            _settle(job, None, error)

    def _work(self) -> None:
        try:
            connection = self.engine.connect()
        except Exception as exc:
            self._fail_all(_translated(exc))
            return
        carried: _Job | None = None
        try:
            while True:
                job = carried if carried is not None else self._jobs.get()
                if job is None:
                    return
                group, carried, stop = self._next_group(job)
                self._run_group(connection, group)
                if stop:
                    return
        finally:
            connection.close()
            self.engine.dispose()

    def _run_group(self, connection: sa.Connection, group: list[_Job]) -> None:
        connection.info[WRITER] = group[0].writer
        try:
            with connection.begin():
                results = [job.operation(connection) for job in group]
        except BaseException as exc:
            if len(group) == 1:
                _settle(group[0], None, _translated(exc))
                return
            for job in group:
                self._run_group(connection, [job])
            return
        for job, result in zip(group, results, strict=True):
            _settle(job, result, None)

    def submit(
        self, operation: Callable[[sa.Connection], T], *, writer: bool = True
    ) -> asyncio.Future[T]:
        """Queue ``operation``; the future resolves once its transaction committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put(_Job(operation, writer, future, loop))
        return future

    async def write(self, operation: Callable[[sa.Connection], T]) -> T:
        """Run ``operation`` in a write transaction; committed when this returns."""
        return await asyncio.shield(self.submit(operation))

    async def read(self, operation: Callable[[sa.Connection], T]) -> T:
        """Run ``operation`` in a read transaction."""
        return await asyncio.shield(self.submit(operation, writer=False))

    async def close(self) -> None:
        """Finish every queued operation, then release the connection."""
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

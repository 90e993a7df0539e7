"""The thread a store runs its transactions in, its own: a hop there and back costs ~20 µs of
CPU against ~60 for ``anyio.to_thread.run_sync`` (its capacity limiter and pool of threads),
and a daemon hops about three times an execution."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

__all__ = ["StoreThread"]

T = TypeVar("T")
_Job = tuple[asyncio.Future[Any], Callable[[], Any]]


class StoreThread:
    """Runs one function at a time, in submission order, for the event loop that started it."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def run(self, function: Callable[[], T]) -> T:
        """``function()``, run in the thread. Its caller must not be cancelled meanwhile (the
        store's flusher runs shielded): the function would run on, its result lost."""
        future: asyncio.Future[T] = self._loop.create_future()
        self._jobs.put((future, function))
        return await future

    def stop(self) -> None:
        """End the thread once what it was handed ran; returns at once (``join`` waits)."""
        self._jobs.put(None)

    def join(self) -> None:
        self._thread.join()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, function = job
            try:
                value = function()
            except BaseException as exc:  # handed to the caller, whatever it is
                self._loop.call_soon_threadsafe(_fail, future, exc)
            else:
                self._loop.call_soon_threadsafe(_resolve, future, value)


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

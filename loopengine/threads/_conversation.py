"""One session's thread held in memory and kept equal to the store's by its version: a round is
committed while the next call is on its way, and the thread is rebuilt from the store only when
another writer came in between."""

from __future__ import annotations

import time
from collections.abc import Sequence

from loopengine.llm import RoundCommit
from loopengine.store import Pending, Store, threads
from loopengine.store.threads import ChatMessage
from loopengine.threads._batches import call_ids, new_batch, prune, with_fresh_call_ids

__all__ = ["THREAD_WINDOW", "Conversation"]

THREAD_WINDOW = 40
Messages = list[ChatMessage]
"""Messages in OpenAI shape."""


class Conversation:
    """The thread of ``session`` at ``version``, as the store holds it."""

    def __init__(
        self,
        store: Store,
        session: str,
        messages: Sequence[ChatMessage] = (),
        version: int = 0,
        *,
        window: int = THREAD_WINDOW,
    ) -> None:
        self.store = store
        self.session = session
        self.window = window
        self._messages = list(messages)
        self._version = version
        self._call_ids = call_ids(self._messages)

    @classmethod
    async def open(cls, store: Store, session: str, *, window: int = THREAD_WINDOW) -> Conversation:
        """The session's thread as the store holds it (empty for a new session)."""
        return cls.of(store, session, await store.read(threads.read_thread, session), window=window)

    @classmethod
    def of(
        cls, store: Store, session: str, thread: threads.Thread, *, window: int = THREAD_WINDOW
    ) -> Conversation:
        """The session's ``thread`` as read from ``store``."""
        return cls(store, session, thread.as_json(), thread.version, window=window)

    @property
    def version(self) -> int:
        return self._version

    @property
    def thread(self) -> Messages:
        """The last ``window`` messages, never a tool result without its call."""
        return prune(self._messages, self.window)

    def commit(self, messages: Messages, operation_id: str) -> RoundCommit:
        """Append ``messages`` as one atomic batch; the write starts now, its outcome is awaited
        through the returned commit (see ``RoundCommit``). Calls reusing an id of the session are
        renamed, in the returned thread too."""
        return self.send(self.batch(messages, operation_id))

    def send(self, batch: tuple[threads.Batch, int]) -> RoundCommit:
        """Start the write of a ``batch`` taken into the thread earlier (see ``commit``)."""
        written = self.store.submit(threads.extend_thread, *batch)
        return RoundCommit(self.thread, self._settle(written))

    def batch(self, messages: Messages, operation_id: str) -> tuple[threads.Batch, int]:
        """``messages`` taken into the thread, as the batch that appends them to the version the
        store holds now, for the caller to write (``threads.extend_thread``)."""
        messages = self._take(messages)
        version = self._version
        self._version = version + 1
        now = time.time()
        return new_batch(self.session, messages, operation_id=operation_id, now=now), version

    def amend(
        self, unsent: tuple[threads.Batch, int], messages: Messages
    ) -> tuple[threads.Batch, int]:
        """``messages`` taken into the thread after a batch not written yet, as one batch that
        appends both under the first's operation, written now (one write instead of two)."""
        joined = [*unsent[0].messages, *self._take(messages)]
        operation = unsent[0].operation_id
        return new_batch(self.session, joined, operation_id=operation, now=time.time()), unsent[1]

    def _take(self, messages: Messages) -> Messages:
        """``messages`` added to the thread, a call reusing an id of the session renamed."""
        messages = with_fresh_call_ids(messages, self._call_ids)
        self._call_ids |= call_ids(messages)
        self._messages = [*self._messages, *messages]
        return messages

    async def append(self, messages: Messages, operation_id: str) -> None:
        """Append ``messages`` as one atomic batch, committed when this returns."""
        await self.commit(messages, operation_id).committed

    async def _settle(self, written: Pending[threads.Thread | None]) -> Messages | None:
        try:
            stored = await written.wait()
        except BaseException:
            self._version = -1  # unknown now: the next commit finds it stale and rebuilds
            raise
        if stored is None:
            return None
        self._messages, self._version = stored.as_json(), stored.version
        self._call_ids = call_ids(self._messages)
        return self.thread

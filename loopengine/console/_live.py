"""Live pages: ``/console/live`` streams, as Server-Sent Events, which executions changed, as
their commits are told (``ApiContext.changes``); a page's script reads the page again on each.
Bounded: a few streams per session, a reader that falls behind is dropped, a stream ends after
``STREAM_S`` (the browser reconnects, its session checked again)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from loopengine.app import REFRESH, Change, Changes, Follower
from loopengine.console._pages import PREFIX, Pages

__all__ = [
    "BACKLOG",
    "HEARTBEAT_S",
    "RETRY_MS",
    "SEND_S",
    "STREAMS",
    "STREAMS_PER_SESSION",
    "STREAM_S",
    "live_routes",
    "since_of",
]

STREAMS_PER_SESSION = 4
"""Open streams a session may hold (a browser opens about six connections to one host)."""
STREAMS = 64
"""Open streams the daemon serves at once."""
BACKLOG = 256
"""Changes a stream may have yet to send before its reader is dropped."""
HEARTBEAT_S = 15.0
"""Longest silence of a stream (a comment keeps proxies from closing it)."""
SEND_S = 10.0
"""Longest a reader may take to accept one event."""
STREAM_S = 600.0
"""How long one stream lasts."""
RETRY_MS = 1000
"""When the browser connects again after a stream ended."""
_MAX_ID = 20


def since_of(given: str | None) -> int | None:
    """The change a reader saw last, from ``Last-Event-ID`` or ``since``; None when it names
    none (or is no number of ours)."""
    if not given or len(given) > _MAX_ID or not given.isdigit():
        return None
    return int(given)


class _Streams:
    """Who holds how many streams."""

    def __init__(self) -> None:
        self.held: Counter[str] = Counter()

    @contextmanager
    def opened(self, session: str) -> Iterator[None]:
        if self.held[session] >= STREAMS_PER_SESSION:
            raise HTTPException(429, f"at most {STREAMS_PER_SESSION} live pages per login")
        if self.held.total() >= STREAMS:
            raise HTTPException(429, f"at most {STREAMS} live pages at once: try again later")
        self.held[session] += 1
        try:
            yield
        finally:
            self.held[session] -= 1
            if not self.held[session]:
                del self.held[session]


class _EventStream(Response):
    """The stream of the changes of ``execution_id`` (of all when None), a refresh first when
    the reader missed some (``since`` behind ``changes.seq``); ends when the reader leaves,
    falls behind or is slow to accept an event, when the daemon stops, and after
    ``STREAM_S``; 429 when ``session`` holds too many."""

    def __init__(
        self,
        changes: Changes,
        streams: _Streams,
        session: str,
        execution_id: str | None,
        since: int | None,
    ) -> None:
        self.status_code, self.background = 200, None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"x-accel-buffering", b"no"),
        ]
        self.changes, self.streams, self.session = changes, streams, session
        self.execution_id, self.since = execution_id, since

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def left() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        with (
            self.streams.opened(self.session),
            self.changes.following(self.execution_id, BACKLOG) as follower,
        ):
            async with anyio.create_task_group() as group:
                group.start_soon(left)
                await self._send(send, follower)
                group.cancel_scope.cancel()

    async def _send(self, send: Send, follower: Follower) -> None:
        start: Message = {
            "type": "http.response.start",
            "status": 200,
            "headers": self.raw_headers,
        }
        await send(start)
        opening = f"retry: {RETRY_MS}\n\n"
        if self.since is not None and self.since < self.changes.seq:
            opening += _event(Change(self.changes.seq, None, REFRESH))
        ends = anyio.current_time() + STREAM_S
        while await self._sent(send, opening) and not follower.closed:
            if follower.dropped:
                await self._sent(send, _event(Change(self.changes.seq, None, REFRESH)))
                break
            left_s = ends - anyio.current_time()
            if left_s <= 0:
                break
            taken = await follower.taken(min(HEARTBEAT_S, left_s))
            opening = "".join(_event(change) for change in taken) or ": still here\n\n"
        await self._sent(send, "", more=False)

    @staticmethod
    async def _sent(send: Send, text: str, more: bool = True) -> bool:
        """Whether the reader accepted ``text`` within ``SEND_S``."""
        with anyio.move_on_after(SEND_S):
            await send({"type": "http.response.body", "body": text.encode(), "more_body": more})
            return True
        return False


def _event(change: Change) -> str:
    return f"id: {change.seq}\nevent: change\ndata: {change.data()}\n\n"


def live_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/live``: the changes of one execution (``?execution=ID``) or of all."""
    streams = _Streams()

    async def live(request: Request) -> Response:
        session = request.scope["state"]["console_session"]
        execution_id = request.query_params.get("execution") or None
        if execution_id is not None and len(execution_id) > 64:
            raise HTTPException(422, "execution: not an execution's id")
        since = since_of(request.headers.get("last-event-id"))
        if since is None:
            since = since_of(request.query_params.get("since"))
        return _EventStream(pages.context.changes, streams, session, execution_id, since)

    return [Route(PREFIX + "live", live, methods=["GET"])]

"""The chat: a message sent (session, mode) through the API's own call of the chat loop, the
reply with each chain stage as a badge that opens on its tools, and the sessions, each thread
readable."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, get_args

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine.api._chat import MAX_MESSAGE, ChatCall, ChatLoop, EventStream
from loopengine.api._context import MAX_SESSION_ID, SESSION_ID
from loopengine.app import Mode, perform, recent_sessions, thread
from loopengine.console._forms import MAX_FORM_BYTES
from loopengine.console._pages import PREFIX, Pages
from loopengine.store import new_id

__all__ = [
    "CHAT",
    "SESSIONS",
    "SHOWN_MESSAGES",
    "STREAMED",
    "chat_fields",
    "chat_routes",
    "progress_text",
]

CHAT = f"{PREFIX}chat"
STREAMED = "text/event-stream"
"""What the page's script accepts when it sends the form: the chain's progress as it runs,
then the page with the reply."""
SESSIONS = 50
"""Sessions the chat page lists, those that grew last first."""
SHOWN_MESSAGES = 200
"""Newest messages a session's page shows."""
_FORM_BYTES = MAX_MESSAGE * 12 + MAX_FORM_BYTES
"""Most bytes of the chat form: a message of ``MAX_MESSAGE`` characters percent-encoded (up to
12 bytes each) and the other fields; the daemon's bound on any body stops it first."""
_MODES: tuple[Mode, ...] = get_args(Mode)
_SESSION = re.compile(SESSION_ID)


def chat_fields(fields: dict[str, str]) -> tuple[str, str, Mode | None]:
    """The message, session (a new one when none is given) and mode a chat form sends, held to
    ``POST /chat``'s bounds; 422 saying which field is wrong."""
    message = fields.get("message", "")
    if not message.strip():
        raise HTTPException(422, "message: write something to send")
    if len(message) > MAX_MESSAGE:
        raise HTTPException(422, f"message: at most {MAX_MESSAGE} characters")
    session = fields.get("session", "").strip() or new_id()
    if len(session) > MAX_SESSION_ID or not _SESSION.match(session):
        raise HTTPException(
            422, f"session: at most {MAX_SESSION_ID} visible characters, no '/' nor space"
        )
    mode = fields.get("mode", "")
    if mode and mode not in _MODES:
        raise HTTPException(422, f"mode: {' or '.join(_MODES)}, or none to let the chat choose")
    return message, session, next((m for m in _MODES if m == mode), None)


def progress_text(event: str, said: Mapping[str, Any]) -> str:
    """What the chain is doing, as a line of the streamed reply's progress."""
    if event == "llm.stage":
        return f"{said.get('node')} ({said.get('role')}) is answering…"
    if event == "llm.tool":
        done = "ok" if said.get("ok") else "failed"
        return f"{said.get('node')} called {said.get('name')} ({done})"
    if event == "llm.stage_done":
        return f"{said.get('node')}: {said.get('status')}, {said.get('turns')} turns"
    return event


def _event(name: str, data: str) -> str:
    """One server-sent event whose data is ``data`` as a JSON string (a single line)."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def chat_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/chat`` (read, send) and ``/console/chat/sessions/{id}``."""
    context = pages.context
    chat_loop_of = ChatLoop(context)

    async def shown(request: Request, status_code: int = 200, **values: Any) -> Response:
        listed = await perform(context.store, recent_sessions(SESSIONS))
        given = {"session": request.query_params.get("session", "")[:MAX_SESSION_ID]}
        return pages.render(
            request,
            "chat.html",
            status_code,
            **{
                "sessions": listed,
                "modes": _MODES,
                "max_message": MAX_MESSAGE,
                "answer": None,
                "error": None,
                "given": given,
                **values,
            },
        )

    async def read(request: Request) -> Response:
        return await shown(request)

    async def answered(
        request: Request,
        fields: dict[str, str],
        progress: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> Response:
        """The chat page with the reply to the form's message, or with why there is none."""
        kept = {name: fields.get(name, "")[:MAX_MESSAGE] for name in ("message", "session", "mode")}
        try:
            message, session, mode = chat_fields(fields)
            call = ChatCall(context, chat_loop_of(), message, session, mode, None)
            answer = await call(progress)
        except HTTPException as exc:
            return await shown(request, exc.status_code, error=exc.detail, given=kept)
        given = {"session": session, "mode": fields.get("mode", "")}
        return await shown(request, answer=answer, asked=message, given=given)

    async def sent(request: Request) -> Response:
        fields = await pages.posted(request, _FORM_BYTES)
        if STREAMED not in request.headers.get("accept", ""):
            return await answered(request, fields)

        async def produce(sender: MemoryObjectSendStream[str]) -> None:
            def progress(event: str, said: Mapping[str, Any]) -> None:
                with suppress(anyio.WouldBlock):
                    sender.send_nowait(_event("progress", progress_text(event, said)))

            page = await answered(request, fields, progress)
            await sender.send(_event("page", bytes(page.body).decode()))

        return EventStream(produce, {})

    async def one(request: Request) -> Response:
        session = request.path_params["session_id"]
        if len(session) > MAX_SESSION_ID or not _SESSION.match(session):
            raise HTTPException(404, "no such session")
        found = await perform(context.store, thread(session))
        shown = found.messages[-SHOWN_MESSAGES:]
        earlier = len(found.messages) - len(shown)
        return pages.render(
            request, "session.html", session=session, thread=found, shown=shown, earlier=earlier
        )

    return [
        Route(CHAT, read, methods=["GET"]),
        Route(CHAT, sent, methods=["POST"]),
        Route(CHAT + "/sessions/{session_id}", one, methods=["GET"]),
    ]

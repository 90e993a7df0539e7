"""The API's chat: ``POST /chat`` answers with the chat response ``loopengine chat --json``
prints; ``POST /v1/chat/completions`` and ``GET /v1/models`` let any OpenAI client talk to the
reflexive chain as the model ``loopengine-reflexive`` (simple mode: ``loopengine-simple``).

Both run the shipped chat loop on the daemon's own engine. An OpenAI request's last user message
is the message; the rest of its messages are not sent on: the thread lives in the daemon, under
the session named by the ``X-Session-ID`` header, else by the ``user`` field, else a new one; the
answer names it in its ``X-Session-ID`` header and its ``loopengine.session_id``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Coroutine, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from fastapi import FastAPI, Header
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from loopengine._suggestions import hint
from loopengine.api._context import MAX_SESSION_ID, SESSION_ID, ApiContext
from loopengine.app import ChatAnswer, Mode, chat, chat_loop
from loopengine.contract import Loop
from loopengine.errors import ContractError, LoopEngineError
from loopengine.store import new_id

if TYPE_CHECKING:
    from loopengine.skills import Progress

__all__ = [
    "KEEP_ALIVE_S",
    "MAX_MESSAGE",
    "MAX_MESSAGES",
    "MODELS",
    "ChatCall",
    "ChatLoop",
    "EventStream",
    "Producer",
    "add_chat_routes",
]

MAX_MESSAGE = 100_000
"""Most characters of one message (the body itself stops at ``MAX_BODY``)."""
MAX_MESSAGES = 1_000
"""Most messages of one OpenAI request."""
MODELS: dict[str, Mode] = {"loopengine-reflexive": "reflexive", "loopengine-simple": "simple"}
"""The models ``/v1`` serves, and the mode each answers in."""
KEEP_ALIVE_S = 15.0
"""How often a streamed answer sends a comment while the chain runs (proxies close idle streams)."""
_COMMENT_CHARS = 500
_BUFFERED = 64

Session = Annotated[str, Field(max_length=MAX_SESSION_ID, pattern=SESSION_ID)]
Text = Annotated[str, Field(max_length=MAX_MESSAGE)]


class ChatIn(BaseModel):
    """One message; ``mode`` forces simple or reflexive (else the loop classifies the message)."""

    message: str = Field(min_length=1, max_length=MAX_MESSAGE, examples=["Capital of France?"])
    session_id: Session | None = None
    mode: Mode | None = None
    user: Session | None = Field(None, description="Whose memory the chat reads and adds to.")
    category: str | None = Field(
        None,
        max_length=100,
        description="Routing category (default: the mode when cluster.routing names it, "
        "else `default`).",
    )


class Summary(BaseModel):
    """The chain behind an answer: the chat response without its reply."""

    mode: str | None
    turns: int
    session_id: str | None
    chain: list[dict[str, Any]]
    tools_used: list[dict[str, Any]]
    execution_id: str


class ChatOut(Summary):
    """The chat response (seed 000 §5)."""

    reply: str


class ContentPart(BaseModel):
    type: str = Field(max_length=40)
    text: Text | None = None


class MessageIn(BaseModel):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Text | Annotated[list[ContentPart], Field(max_length=100)] | None = None


class CompletionIn(BaseModel):
    """An OpenAI chat completion request; sampling parameters and tools are not used."""

    model: str = Field(max_length=200, examples=["loopengine-reflexive"])
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    user: Session | None = None


class Usage(BaseModel):
    """Tokens of the whole chain; it counts totals only, so the prompt/completion split is 0."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class Completion(BaseModel):
    """OpenAI's ``chat.completion``, with the chain's summary in ``loopengine``."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    loopengine: Summary


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None


class Chunk(BaseModel):
    """OpenAI's ``chat.completion.chunk``; the last one carries the usage and the summary."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    loopengine: Summary | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "loopengine"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


Producer = Callable[[MemoryObjectSendStream[str]], Coroutine[Any, Any, None]]


class EventStream(StreamingResponse):
    """Server-sent events that ``produce`` writes in this response's own task group (an async
    generator holding one would be closed from another task); they end when it returns, and a
    client that leaves stops it."""

    def __init__(self, produce: Producer, headers: Mapping[str, str]) -> None:
        sender, receiver = anyio.create_memory_object_stream[str](_BUFFERED)
        headers = {**headers, "Cache-Control": "no-cache"}
        super().__init__(receiver, headers=headers, media_type="text/event-stream")
        self.produce, self.sender, self.receiver = produce, sender, receiver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self.receiver:
            async with anyio.create_task_group() as group:
                group.start_soon(self.produced)
                group.start_soon(self.keep_alive)
                await super().__call__(scope, receive, send)
                group.cancel_scope.cancel()

    async def produced(self) -> None:
        """Run ``produce``; the stream ends when it returns."""
        async with self.sender:
            await self.produce(self.sender)

    async def keep_alive(self) -> None:
        """A comment every ``KEEP_ALIVE_S`` (proxies close idle streams)."""
        while True:
            await anyio.sleep(KEEP_ALIVE_S)
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self.sender.send_nowait(": keep-alive\n\n")


def add_chat_routes(app: FastAPI, context: ApiContext) -> None:
    """``/chat``, ``/v1/chat/completions``, ``/v1/models``."""
    served_since = int(time.time())
    chat_loop_of = ChatLoop(context)

    @app.post("/chat")
    async def chat_message(request: ChatIn) -> ChatOut:
        """One message through the chat loop: what ``loopengine chat --json`` prints; 503 when
        no LLM node is configured or the chain ends without a reply (with each stage's reason)."""
        loop = chat_loop_of()
        given = (request.message, request.session_id, request.mode, request.user)
        answer = await ChatCall(context, loop, *given, request.category)()
        return ChatOut.model_validate(answer.response())

    @app.get("/v1/models")
    async def models() -> ModelList:
        """The models an OpenAI client may name: the reflexive chain and simple mode."""
        return ModelList(data=[ModelCard(id=name, created=served_since) for name in MODELS])

    @app.post("/v1/chat/completions", response_model=None, responses={200: {"model": Completion}})
    async def completions(
        request: CompletionIn,
        x_session_id: Annotated[
            str | None, Header(max_length=MAX_SESSION_ID, pattern=SESSION_ID)
        ] = None,
    ) -> Response:
        """OpenAI-compatible: the last user message through the chain of ``model``; ``stream``
        sends ``chat.completion.chunk`` events, the chain's progress as comments meanwhile. A
        completion is encoded by its model at once (what FastAPI would encode it to, for less)."""
        mode = _mode(request.model)
        message = _last_user_text(request.messages)
        session = x_session_id or request.user or new_id()
        call = ChatCall(context, chat_loop_of(), message, session, mode, request.user)
        reply = _Reply(call, request.model)
        headers = {"X-Session-ID": session}
        if request.stream:
            return EventStream(reply.stream, headers)
        completion = reply.completion(await call())
        return Response(
            completion.model_dump_json(), media_type="application/json", headers=headers
        )


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One message to answer on the daemon's engine."""

    context: ApiContext
    loop: Loop
    message: str
    session: str | None
    mode: Mode | None
    user: str | None
    category: str | None = None

    async def __call__(self, progress: Progress | None = None) -> ChatAnswer:
        """The chain's answer; 422 for an input the chat loop's params refuse, 503 when it ends
        without a reply, with each stage's reason."""
        runtime = self.context.runtime
        try:
            given = (self.message, self.session, self.mode, progress, self.user, self.category)
            answer = await chat(runtime, self.loop, *given)
        except ContractError as exc:
            raise HTTPException(422, str(exc)) from None
        except LoopEngineError as exc:
            raise HTTPException(503, str(exc)) from None
        if not answer.reply:
            raise HTTPException(503, f"no reply ({answer.why_no_reply()})")
        return answer


@dataclass(frozen=True, slots=True)
class _Reply:
    """``call`` answered in OpenAI's shapes, as one completion or as a stream of chunks."""

    call: ChatCall
    model: str
    id: str = field(default_factory=lambda: f"chatcmpl-{new_id()}")
    created: int = field(default_factory=lambda: int(time.time()))

    def completion(self, answer: ChatAnswer) -> Completion:
        return Completion(
            id=self.id,
            created=self.created,
            model=self.model,
            choices=[Choice(message=AssistantMessage(content=answer.reply))],
            usage=Usage(total_tokens=answer.tokens),
            loopengine=Summary.model_validate(answer.response()),
        )

    def chunk(self, delta: Delta, answer: ChatAnswer | None = None) -> str:
        """One ``data:`` event; the last (with ``answer``) ends the choice and sums up."""
        chunk = Chunk(
            id=self.id,
            created=self.created,
            model=self.model,
            choices=[ChunkChoice(delta=delta, finish_reason="stop" if answer else None)],
            usage=Usage(total_tokens=answer.tokens) if answer else None,
            loopengine=Summary.model_validate(answer.response()) if answer else None,
        )
        return f"data: {chunk.model_dump_json(exclude_none=True)}\n\n"

    async def stream(self, sender: MemoryObjectSendStream[str]) -> None:
        """The role at once, the chain's progress as comments while it runs (what a slow client
        cannot take is dropped), then the reply, the end of the choice and ``[DONE]``, or an
        error event."""

        def progress(event: str, fields: Mapping[str, Any]) -> None:
            with suppress(anyio.WouldBlock):
                sender.send_nowait(_comment(event, fields))

        await sender.send(self.chunk(Delta(role="assistant", content="")))
        try:
            answer = await self.call(progress)
        except HTTPException as exc:
            error = {"error": {"code": "unavailable", "message": exc.detail}}
            await sender.send(f"data: {json.dumps(error, ensure_ascii=False)}\n\n")
            return
        await sender.send(self.chunk(Delta(content=answer.reply)))
        await sender.send(self.chunk(Delta(), answer))
        await sender.send("data: [DONE]\n\n")


def _comment(event: str, fields: Mapping[str, Any]) -> str:
    """An SSE comment (clients skip them) naming a progress event and its scalar fields."""
    shown = {k: v for k, v in fields.items() if isinstance(v, str | int | float | bool)}
    return f": {event} {json.dumps(shown, ensure_ascii=False)[:_COMMENT_CHARS]}\n\n"


class ChatLoop:
    """The chat loop, loaded on first use and kept (loading and checking it took ~6 ms, as
    long as a whole chat on a fast node); 503 saying what is missing (LLM nodes, the loop
    file), asked again at the next request."""

    def __init__(self, context: ApiContext) -> None:
        self.context = context
        self.loaded: Loop | None = None

    def __call__(self) -> Loop:
        if self.loaded is None:
            try:
                self.loaded = chat_loop(self.context.runtime)
            except LoopEngineError as exc:
                raise HTTPException(503, str(exc)) from None
        return self.loaded


def _mode(model: str) -> Mode:
    """The mode ``model`` answers in; 404 naming the served models."""
    if model not in MODELS:
        raise HTTPException(404, f"no model {model!r}: {hint(model, MODELS)}")
    return MODELS[model]


def _last_user_text(messages: list[MessageIn]) -> str:
    """The text of the last user message; 422 when there is none, or it is empty or not text."""
    last = next((m for m in reversed(messages) if m.role == "user"), None)
    if last is None:
        raise HTTPException(422, "messages: no user message to answer")
    content = last.content or ""
    if not isinstance(content, str):
        if any(part.type != "text" for part in content):
            raise HTTPException(422, "messages: only text content is answered")
        content = "\n".join(part.text or "" for part in content)
    if not content.strip():
        raise HTTPException(422, "messages: the last user message is empty")
    return content

"""What users need to test their own loops: a scripted OpenAI-compatible server on loopback,
and an in-memory store (``async with memory_store() as store``, the real store on SQLite
``:memory:``).

    with FakeLLMServer() as server:
        server.script("qwen3:1.7b", [tool_call("list_dir", {"path": "."}), reply("Done.")])
        node = {"base_url": server.base_url, "model": "qwen3:1.7b"}

Each model answers from its own script, in order; ``forever(x)`` repeats ``x`` (alone, it is a
whole script), ``answering(f)`` answers each request with ``f(request)``, ``echo()`` with the
last user message; the script of model ``"*"`` answers the models without one. A model without
a script, or past the end of its script, answers 500. ``status(503)`` and ``hang(5)`` make a node
misbehave. Every request received is kept in ``server.requests``. ``"stream": true`` requests get
server-sent events, as OpenAI sends them. ``POST /v1/embeddings`` answers each input with
``embedding(text)`` (words hashed into ``EMBEDDING_DIMENSIONS`` dimensions: texts sharing words
are near), unless the model's script says otherwise (a ``status``, a ``raw`` body).

``python -m loopengine.testing [SCRIPT.json] [--echo] [--port N]`` serves one from the command
line until Ctrl-C.

``WebhookReceiver`` is the other end of a loop's ``webhook.send``: it keeps each JSON POST it
gets, its Standard Webhooks signature checked when given the secret (``--receive [--secret S]``
on the command line).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from loopengine._json import JSON, JSONObject
from loopengine.store import Store
from loopengine.testing._receiver import Delivery, WebhookReceiver

__all__ = [
    "ANY_MODEL",
    "EMBEDDING_DIMENSIONS",
    "Answering",
    "Delivery",
    "FakeLLMServer",
    "Forever",
    "Response",
    "WebhookReceiver",
    "answering",
    "echo",
    "embedding",
    "forever",
    "hang",
    "memory_store",
    "raw",
    "reply",
    "status",
    "tool_call",
    "tool_calls",
]


@dataclass(frozen=True)
class Response:
    """One scripted answer: a chat completion ``message``, or an HTTP status, after a delay."""

    message: JSONObject | None = None
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: JSONObject | None = None
    chunk_delay_s: float = 0.0
    """When streamed, the pause before each chunk (a slow model that keeps talking)."""
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5}
    )


@dataclass(frozen=True)
class Forever:
    """Answer ``response`` to every request from now on."""

    response: Response


@dataclass(frozen=True)
class Answering:
    """Answer every request from now on with what ``respond`` makes of it (its JSON body)."""

    respond: Callable[[JSONObject], Response]


def reply(content: str, finish_reason: str = "stop") -> Response:
    """An assistant message with ``content``."""
    return Response({"role": "assistant", "content": content}, finish_reason)


def tool_calls(*calls: tuple[str, Any], content: str | None = None) -> Response:
    """Assistant tool calls; each argument value is sent as JSON text unless it is already text."""
    return Response(
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": f"call_{uuid.uuid4().hex[:8]}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
                for name, arguments in calls
            ],
        },
        "tool_calls",
    )


def tool_call(name: str, arguments: Any = None, content: str | None = None) -> Response:
    """One assistant tool call."""
    return tool_calls((name, {} if arguments is None else arguments), content=content)


def raw(body: JSONObject) -> Response:
    """A response body sent exactly as given."""
    return Response(body=body)


def status(
    code: int, retry_after: float | None = None, message: str = "scripted error"
) -> Response:
    """An HTTP error (with ``Retry-After`` when given)."""
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    return Response(status=code, headers=headers, body={"error": {"message": message}})


def hang(seconds: float, then: Response | None = None) -> Response:
    """Answer after ``seconds`` (what a stuck node looks like to a client with a deadline)."""
    base = then or reply("late")
    return Response(base.message, base.finish_reason, base.status, base.headers, seconds, base.body)


def answering(respond: Callable[[JSONObject], Response]) -> Answering:
    """Answer each request with ``respond(request)`` (a model whose answer depends on what it
    is asked: a grader, a node whose quality changes while a test runs)."""
    return Answering(respond)


def forever(response: Response) -> Forever:
    """Answer ``response`` to every request from now on: the end of a script, or a whole one."""
    return Forever(response)


def _last_user_text(request: JSONObject) -> str:
    sent = request.get("messages")
    messages = [m for m in sent if isinstance(m, dict)] if isinstance(sent, list) else []
    content = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return str(content or "")


def echo() -> Answering:
    """Answer every request with the text of its last user message (a model that tries a chat
    config without a model)."""
    return Answering(lambda request: reply(_last_user_text(request)))


EMBEDDING_DIMENSIONS = 64
"""Dimensions of the scripted server's embeddings."""
_WORD = re.compile(r"[^\W_]+")


def embedding(text: str) -> list[float]:
    """A deterministic embedding of ``text``: each lower-cased word counted into one of
    ``EMBEDDING_DIMENSIONS`` dimensions (by its hash, with a sign), scaled to unit length."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=2).digest()
        vector[digest[0] % EMBEDDING_DIMENSIONS] += 1.0 if digest[1] & 1 else -1.0
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return [value / norm for value in vector]


def _embeddings(request: JSONObject) -> JSONObject:
    given = request.get("input")
    texts = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    data: list[JSON] = [
        {"object": "embedding", "index": index, "embedding": embedding(str(text))}
        for index, text in enumerate(texts)
    ]
    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
    return {"object": "list", "model": request.get("model"), "data": data, "usage": usage}


ANY_MODEL = "*"
"""The model whose script answers the models without one."""
Script = list[Response | Forever | Answering]


class FakeLLMServer:
    """A scripted OpenAI-compatible HTTP server on 127.0.0.1, in a thread (``with`` runs it);
    ``port`` 0 takes a free one, a fixed port serves a config written for a real node."""

    def __init__(self, port: int = 0) -> None:
        self._scripts: dict[str, Script] = {}
        self._lock = threading.Lock()
        self.requests: list[JSONObject] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def script(self, model: str, responses: Script | Forever | Answering) -> None:
        """What ``model`` answers, in order (``ANY_MODEL``: the models without a script)."""
        steps: Script = (
            [responses] if isinstance(responses, Forever | Answering) else list(responses)
        )
        with self._lock:
            self._scripts[model] = steps

    def requests_for(self, model: str) -> list[JSONObject]:
        return [r for r in self.requests if r.get("model") == model]

    def _next(self, model: str, request: JSONObject) -> Response:
        with self._lock:
            script = self._scripts.get(model, self._scripts.get(ANY_MODEL))
            if not script:
                return status(500, message=f"no scripted answer left for model {model!r}")
            head = script[0]
            if isinstance(head, Forever):
                return head.response
            if isinstance(head, Answering):
                respond = head.respond
            else:
                script.pop(0)
                return head
        return respond(request)

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, code: int, body: JSON, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    models = [{"id": m, "object": "model"} for m in server._scripts]
                    self._send(200, {"object": "list", "data": models})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                route = self.path.rstrip("/")
                if not route.endswith(("/chat/completions", "/embeddings")):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with server._lock:
                    server.requests.append(request)
                model = str(request.get("model"))
                if route.endswith("/embeddings"):
                    self._embed(model, request)
                    return
                response = server._next(model, request)
                if response.delay_s:
                    time.sleep(response.delay_s)
                if response.status != 200:
                    self._send(response.status, response.body or {}, response.headers)
                elif response.body is not None:
                    self._send(200, response.body)
                elif request.get("stream"):
                    self._stream(request, response)
                else:
                    self._send(200, _completion(request, response))

            def _embed(self, model: str, request: JSONObject) -> None:
                """Embeddings, unless what is left of the model's own script answers an error or
                a body."""
                scripted = server._next(model, request) if server._scripts.get(model) else None
                if scripted is not None and scripted.delay_s:
                    time.sleep(scripted.delay_s)
                if scripted is not None and scripted.status != 200:
                    self._send(scripted.status, scripted.body or {}, scripted.headers)
                elif scripted is not None and scripted.body is not None:
                    self._send(200, scripted.body)
                else:
                    self._send(200, _embeddings(request))

            def _stream(self, request: JSONObject, response: Response) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in _chunks(request, response):
                    if response.chunk_delay_s:
                        time.sleep(response.chunk_delay_s)
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        return Handler


def _usage(response: Response) -> dict[str, int]:
    usage = dict(response.usage)
    usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    return usage


def _completion(request: JSONObject, response: Response) -> JSONObject:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model"),
        "choices": [
            {"index": 0, "message": response.message, "finish_reason": response.finish_reason}
        ],
        "usage": _usage(response),
    }


def _chunks(request: JSONObject, response: Response) -> Iterator[JSONObject]:
    """The answer as real servers stream it: text and call arguments in small pieces, usage last
    when ``stream_options.include_usage`` asks for it."""
    message = response.message or {}
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "model": request.get("model"),
    }

    def chunk(delta: JSONObject, finish_reason: str | None = None) -> JSONObject:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant"})
    content = message.get("content") or ""
    for piece in _pieces(content):
        yield chunk({"content": piece})
    calls = message.get("tool_calls") or ()
    for index, call in enumerate(calls if isinstance(calls, Sequence) else ()):
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") or {}
        named = function.get("name") if isinstance(function, Mapping) else None
        head = {**call, "function": {"name": named, "arguments": ""}}
        yield chunk({"tool_calls": [{"index": index, **head}]})
        arguments = function.get("arguments") or "" if isinstance(function, Mapping) else ""
        for part in _pieces(arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, response.finish_reason)
    options = request.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(response)}


def _pieces(text: JSON) -> Iterator[JSON]:
    """``text`` in pieces of 8, as a server streams it (nothing when it is not a sequence)."""
    if isinstance(text, Sequence):
        for start in range(0, len(text), 8):
            yield text[start : start + 8]


@asynccontextmanager
async def memory_store() -> AsyncIterator[Store]:
    """A fresh store in memory (migrated, same code as the file one), for as long as the block
    lasts: ``async with memory_store() as store:``."""
    async with Store.open("sqlite://") as store:
        yield store

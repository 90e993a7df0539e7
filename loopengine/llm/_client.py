"""The OpenAI-compatible client: one shared httpx client per node, a total deadline per call,
retries with backoff on connect errors, 429 and 5xx (honouring ``Retry-After``); plain or
streamed (server-sent events); a span per call when the process traces."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, TypeVar

import anyio
import httpx

import loopengine._tracing as tracing
from loopengine.contract import Node
from loopengine.errors import LLMError
from loopengine.llm._stream import DONE, Assembly, event_data, token_usage

if TYPE_CHECKING:
    from loopengine.llm._toolbox import ToolSpec
    from loopengine.store.threads import ChatMessage

__all__ = ["MAX_DIMENSIONS", "ChatClient", "ChatRequest", "Completion", "TextSink"]

T = TypeVar("T")
MAX_DIMENSIONS = 8192
"""Most dimensions of an embedding taken from a node."""

TextSink = Callable[[str], None]
"""Told each piece of an answer's text as a streamed call receives it."""

_RETRYABLE = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0


class StreamOptions(TypedDict):
    include_usage: bool


class ChatRequest(TypedDict):
    """A chat completion request's body, as a node is sent it (OpenAI shape)."""

    model: str
    messages: list[ChatMessage]
    tools: NotRequired[list[ToolSpec]]
    tool_choice: NotRequired[str]
    max_tokens: NotRequired[int]
    temperature: NotRequired[float]
    stream: NotRequired[bool]
    stream_options: NotRequired[StreamOptions]


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: the first choice, as the node sent it (``parse_reply`` reads it, trusting
    none of it), token usage and how long it took."""

    choice: Mapping[str, Any]
    usage: dict[str, int]
    model: str
    latency_ms: float

    @property
    def tokens(self) -> int:
        return int(self.usage.get("total_tokens") or 0) or int(
            self.usage.get("prompt_tokens", 0) + self.usage.get("completion_tokens", 0)
        )


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return min(_MAX_RETRY_AFTER_S, max(0.0, float(value))) if value else None
    except ValueError:
        return None


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error or body)[:200]


class ChatClient:
    """Chat completions against one node."""

    def __init__(
        self,
        name: str,
        node: Node,
        http: httpx.AsyncClient,
        *,
        api_key: str | None = None,
        retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        self.name = name
        self.node = node
        self.http = http
        self.retries = retries
        self.backoff_s = backoff_s
        self.headers = {**http.headers, "Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.url = httpx.URL(node.base_url.rstrip("/") + "/chat/completions")

    def _request(self, body: ChatRequest) -> httpx.Request:
        """The POST of ``body``, made here rather than by the client's ``post``: merging the
        client's defaults into each request costs more than the call to a local node, so its
        headers are merged once (``__init__``)."""
        encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return httpx.Request("POST", self.url, headers=self.headers, content=encoded.encode())

    def _body(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> ChatRequest:
        body: ChatRequest = {"model": self.node.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
            if self.node.tool_choice:
                body["tool_choice"] = "auto"
        most = [n for n in (max_tokens, self.node.max_tokens) if n is not None]
        if most:
            body["max_tokens"] = min(most)
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def _unreachable(self, exc: httpx.TransportError) -> LLMError:
        return LLMError(
            f"node {self.name} ({self.node.base_url}) unreachable: {type(exc).__name__}: {exc}",
            node=self.name,
            retryable=True,
        )

    def _refused(self, response: httpx.Response) -> LLMError:
        return LLMError(
            f"node {self.name} answered {response.status_code}: {_message(response)}",
            node=self.name,
            status_code=response.status_code,
            retryable=response.status_code in _RETRYABLE,
            retry_after=_retry_after(response),
        )

    async def _plain(self, body: ChatRequest, started: float) -> Completion:
        try:
            response = await self.http.send(self._request(body))
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        if response.status_code != 200:
            raise self._refused(response)
        try:
            payload = response.json()
            choice = payload["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                f"node {self.name} sent no usable completion: {response.text[:200]!r}",
                node=self.name,
            ) from None
        latency = (time.perf_counter() - started) * 1000
        return Completion(
            choice,
            token_usage(payload.get("usage")),
            str(payload.get("model") or self.node.model),
            latency,
        )

    async def _streamed(
        self, body: ChatRequest, started: float, on_text: TextSink | None
    ) -> Completion:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        assembly = Assembly()
        try:
            response = await self.http.send(self._request(body), stream=True)
            try:
                if response.status_code != 200:
                    await response.aread()
                    raise self._refused(response)
                async for line in response.aiter_lines():
                    data = event_data(line)
                    if data is None:
                        continue
                    if data.strip() == DONE:
                        break
                    text = assembly.feed(data)
                    if text and on_text is not None:
                        on_text(text)
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        except LLMError as exc:
            if exc.node is not None:
                raise
            raise LLMError(f"node {self.name} broke its stream: {exc}", node=self.name) from None
        latency = (time.perf_counter() - started) * 1000
        return Completion(
            assembly.choice(), assembly.usage, assembly.model or self.node.model, latency
        )

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        *,
        temperature: float | None = None,
        on_text: TextSink | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """One completion within the node's total deadline (``timeout_s``), retrying what can be;
        at most ``max_tokens`` long when given (and the node's own ``max_tokens``).

        Streamed when the node says ``stream: true`` or ``on_text`` wants the answer's text as it
        comes; the deadline covers the whole stream, not each chunk."""
        body = self._body(messages, tools, temperature, max_tokens)
        streamed = self.node.stream or on_text is not None

        async def attempt() -> Completion:
            started = time.perf_counter()
            if streamed:
                return await self._streamed(body, started, on_text)
            return await self._plain(body, started)

        with tracing.llm_span("chat", self.name, self.node.model, self.node.base_url, body) as span:
            done = await self._within_deadline(attempt)
            tracing.answered(span, done.model, done.usage, done.latency_ms)
        return done

    async def _within_deadline(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` within the node's total deadline (``timeout_s``), tried again with
        backoff while it fails with a retryable ``LLMError``."""
        deadline = self.node.timeout_s
        try:
            with anyio.fail_after(deadline):
                tries = 0
                while True:
                    try:
                        return await attempt()
                    except LLMError as exc:
                        if not exc.retryable or tries >= self.retries:
                            raise
                        tries += 1
                        delay = exc.retry_after
                        if delay is None:
                            delay = random.uniform(0, self.backoff_s * 2 ** (tries - 1))
                        await anyio.sleep(delay)
        except TimeoutError:
            raise LLMError(
                f"node {self.name} did not answer within {deadline:g} s",
                node=self.name,
                retryable=True,
            ) from None

    async def embed(self, texts: Sequence[str], model: str) -> list[list[float]]:
        """The embedding of each of ``texts`` by ``model`` (``POST /embeddings``), in order,
        within the node's deadline; ``LLMError`` when the answer is not one finite vector of one
        dimension per text."""
        encoded = json.dumps({"model": model, "input": list(texts)}, ensure_ascii=False)
        url = httpx.URL(self.node.base_url.rstrip("/") + "/embeddings")

        async def attempt() -> list[list[float]]:
            request = httpx.Request("POST", url, headers=self.headers, content=encoded.encode())
            try:
                response = await self.http.send(request)
            except httpx.TransportError as exc:
                raise self._unreachable(exc) from None
            if response.status_code != 200:
                raise self._refused(response)
            return self._vectors(response, len(texts))

        with tracing.llm_span("embeddings", self.name, model, self.node.base_url, {}):
            return await self._within_deadline(attempt)

    def _vectors(self, response: httpx.Response, count: int) -> list[list[float]]:
        """The vectors of an embeddings answer, in the order of its ``index`` fields, which must
        be 0 to ``count`` - 1, each once."""
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            indexes = [item["index"] for item in data]
            vectors = [[float(value) for value in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError, AttributeError):
            indexes, vectors = [], []
        sizes = {len(vector) for vector in vectors}
        usable = (
            indexes == list(range(count))
            and len(sizes) == 1
            and 0 < sizes.pop() <= MAX_DIMENSIONS
            and all(math.isfinite(value) for vector in vectors for value in vector)
        )
        if not usable:
            raise LLMError(
                f"node {self.name} sent no usable embeddings for {count} texts: "
                f"{response.text[:200]!r}",
                node=self.name,
            )
        return vectors

"""The real client against the scripted server: deadlines, retries, errors, usage."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from loopengine.contract import Node
from loopengine.errors import LLMError
from loopengine.llm import COOL_AFTER, ChatClient, NodeHealth
from loopengine.testing import FakeLLMServer, hang, reply, status, tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def _client(server: FakeLLMServer, http: httpx.AsyncClient, **node: object) -> ChatClient:
    settings = {"base_url": server.base_url, "model": "m", "timeout_s": 5, **node}
    return ChatClient("OL1", Node.model_validate(settings), http, backoff_s=0.01)


async def test_a_completion_with_usage(server: FakeLLMServer, http: httpx.AsyncClient) -> None:
    server.script("m", [reply("hello")])
    completion = await _client(server, http).chat([{"role": "user", "content": "hi"}])
    assert completion.choice["message"]["content"] == "hello"
    assert completion.tokens == 15


async def test_tools_are_offered_with_tool_choice_when_the_node_accepts_it(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [tool_call("list_dir", {"path": "."}), reply("ok")])
    tools = [{"type": "function", "function": {"name": "list_dir", "parameters": {}}}]
    await _client(server, http).chat([], tools)
    await _client(server, http, tool_choice=False).chat([], tools)
    first, second = server.requests
    assert first["tool_choice"] == "auto"
    assert "tool_choice" not in second
    assert second["tools"] == tools


async def test_a_request_sends_the_node_s_bounds_and_a_temperature_only_when_given(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [reply("one"), reply("two")])
    client = _client(server, http, max_tokens=64)
    await client.chat([{"role": "user", "content": "hi"}], temperature=0.2)
    await client.chat([{"role": "user", "content": "hi"}])
    warm, plain = server.requests
    assert list(warm) == ["model", "messages", "max_tokens", "temperature"]
    assert (warm["max_tokens"], warm["temperature"]) == (64, 0.2)
    assert list(plain) == ["model", "messages", "max_tokens"]


async def test_a_call_s_max_tokens_is_sent_within_the_node_s(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [reply("one"), reply("two"), reply("three")])
    await _client(server, http).chat([], max_tokens=50)
    await _client(server, http, max_tokens=64).chat([], max_tokens=50)
    await _client(server, http, max_tokens=64).chat([], max_tokens=500)
    assert [r["max_tokens"] for r in server.requests] == [50, 50, 64]


async def test_5xx_and_429_are_retried_honouring_retry_after(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [status(503), status(429, retry_after=0.2), reply("finally")])
    started = time.monotonic()
    completion = await _client(server, http).chat([])
    assert completion.choice["message"]["content"] == "finally"
    assert time.monotonic() - started >= 0.2
    assert len(server.requests) == 3


async def test_retries_are_bounded(server: FakeLLMServer, http: httpx.AsyncClient) -> None:
    server.script("m", [status(500), status(500), status(500), reply("too late")])
    with pytest.raises(LLMError) as caught:
        await _client(server, http).chat([])
    assert caught.value.status_code == 500
    assert len(server.requests) == 3


@pytest.mark.parametrize("code", [401, 404, 400])
async def test_client_errors_are_not_retried(
    server: FakeLLMServer, http: httpx.AsyncClient, code: int
) -> None:
    server.script("m", [status(code, message="nope"), reply("never")])
    with pytest.raises(LLMError, match=f"node OL1 answered {code}: nope"):
        await _client(server, http).chat([])
    assert len(server.requests) == 1


async def test_the_total_deadline_holds_for_a_silent_node(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [hang(3)])
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 0\.3 s"):
        await _client(server, http, timeout_s=0.3).chat([])
    assert time.monotonic() - started < 2


async def test_the_total_deadline_holds_even_when_chunks_trickle(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [replace(reply("x" * 400), chunk_delay_s=0.05)])
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 0\.3 s"):
        await _client(server, http, timeout_s=0.3, stream=True).chat([])
    assert time.monotonic() - started < 2


async def test_a_streamed_answer_is_the_same_completion_with_its_text_as_it_comes(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [reply("hello world, streamed in pieces")])
    pieces: list[str] = []
    completion = await _client(server, http).chat([], on_text=pieces.append)
    assert completion.choice["message"]["content"] == "hello world, streamed in pieces"
    assert "".join(pieces) == "hello world, streamed in pieces"
    assert len(pieces) > 1
    assert completion.tokens == 15
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_streamed_tool_calls_are_assembled_from_their_fragments(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [tool_call("read_file", {"path": "docs/a-long-file-name.txt"})])
    completion = await _client(server, http, stream=True).chat([])
    (call,) = completion.choice["message"]["tool_calls"]
    assert call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "docs/a-long-file-name.txt"}
    assert call["id"].startswith("call_")
    assert completion.choice["finish_reason"] == "tool_calls"


async def test_a_streamed_call_refused_by_the_node_is_retried_like_a_plain_one(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [status(503), reply("after a retry")])
    completion = await _client(server, http, stream=True).chat([])
    assert completion.choice["message"]["content"] == "after a retry"


async def test_an_offline_node_is_a_retryable_llm_error(http: httpx.AsyncClient) -> None:
    node = Node.model_validate({"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout_s": 2})
    with pytest.raises(LLMError, match="unreachable") as caught:
        await ChatClient("M1", node, http, retries=0).chat([])
    assert caught.value.retryable


async def test_the_api_key_is_sent_as_a_bearer_token(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("m", [reply("ok")])
    settings = Node.model_validate({"base_url": server.base_url, "model": "m"})
    await ChatClient("M2", settings, http, api_key="k-123").chat([])
    assert server.requests[0]["model"] == "m"


def test_health_cools_down_after_repeated_failures_not_one() -> None:
    health = NodeHealth()
    for _ in range(COOL_AFTER - 1):
        health = health.after_failure(100.0, "boom", 503)
        assert health.available(100.0)
    health = health.after_failure(100.0, "boom", 503)
    assert not health.available(100.0)
    assert health.available(100.0 + 31)


def test_health_cools_down_at_once_on_401_and_404() -> None:
    assert not NodeHealth().after_failure(0.0, "unauthorized", 401).available(1.0)
    assert not NodeHealth().after_failure(0.0, "no such model", 404).available(1.0)


def test_a_success_resets_health() -> None:
    health = NodeHealth().after_failure(0.0, "x", 500).after_failure(0.0, "x", 500)
    assert health.after_success() == NodeHealth()

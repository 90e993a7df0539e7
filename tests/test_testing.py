"""The helpers users test their loops with."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from loopengine.contract import LoadReport
from loopengine.engine import Engine, Services
from loopengine.skills.builtin import builtin_registry
from loopengine.store import executions
from loopengine.testing import (
    FakeLLMServer,
    answering,
    memory_store,
    raw,
    reply,
    status,
    tool_calls,
)
from tests.conftest import MINIMAL

pytestmark = pytest.mark.anyio


async def test_memory_store_runs_a_loop(load: Callable[[str], LoadReport]) -> None:
    report = load(MINIMAL)
    assert report.loop is not None
    async with memory_store() as store:
        done = await Engine(Services(builtin_registry(), store)).run(report.loop)
        rows = await store.read(executions.list_executions)
    assert [row.id for row in rows] == [done.execution_id]


def test_scripts_answer_in_order_then_500() -> None:
    with FakeLLMServer() as server:
        server.script("m", [reply("one"), status(503, retry_after=2)])
        first = httpx.post(
            server.base_url + "/chat/completions", json={"model": "m", "messages": []}
        )
        second = httpx.post(
            server.base_url + "/chat/completions", json={"model": "m", "messages": []}
        )
        third = httpx.post(
            server.base_url + "/chat/completions", json={"model": "m", "messages": []}
        )
    assert first.json()["choices"][0]["message"]["content"] == "one"
    assert (second.status_code, second.headers["Retry-After"]) == (503, "2")
    assert third.status_code == 500


def test_several_tool_calls_and_raw_bodies() -> None:
    with FakeLLMServer() as server:
        server.script("m", [tool_calls(("a", {}), ("b", '{"x": 1}')), raw({"choices": []})])
        calls = httpx.post(server.base_url + "/chat/completions", json={"model": "m"}).json()
        body = httpx.post(server.base_url + "/chat/completions", json={"model": "m"}).json()
    message = calls["choices"][0]["message"]
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == ["{}", '{"x": 1}']
    assert body == {"choices": []}


def test_streaming_sends_server_sent_events() -> None:
    with FakeLLMServer() as server:
        server.script("m", [reply("hello world, streamed")])
        with httpx.stream(
            "POST", server.base_url + "/chat/completions", json={"model": "m", "stream": True}
        ) as response:
            events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    assert len(events) > 3


def test_models_are_listed() -> None:
    with FakeLLMServer() as server:
        server.script("qwen3:1.7b", [])
        models = httpx.get(server.base_url + "/models").json()
    assert [m["id"] for m in models["data"]] == ["qwen3:1.7b"]


def test_a_model_can_answer_what_it_is_asked() -> None:
    with FakeLLMServer() as server:
        server.script(
            "echo", [answering(lambda request: reply(request["messages"][-1]["content"]))]
        )
        for said in ("one", "two"):
            body = {"model": "echo", "messages": [{"role": "user", "content": said}]}
            answer = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)
            assert answer.json()["choices"][0]["message"]["content"] == said

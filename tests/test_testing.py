"""The helpers users test their loops with."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import LoadReport
from loopengine.engine import Engine, Services
from loopengine.errors import ContractError
from loopengine.store import executions
from loopengine.testing import (
    ANY_MODEL,
    FakeLLMServer,
    answering,
    echo,
    forever,
    memory_store,
    raw,
    reply,
    status,
    tool_calls,
)
from loopengine.testing._script import read_script
from tests.conftest import MINIMAL
from tests.waiting import next_line

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


def _ask(server: FakeLLMServer, model: str, *messages: dict[str, Any]) -> Any:
    body = {"model": model, "messages": list(messages)}
    answer = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)
    return answer.json()["choices"][0]["message"]["content"]


def test_forever_alone_is_a_whole_script() -> None:
    with FakeLLMServer() as server:
        server.script("m", forever(reply("again")))
        assert [_ask(server, "m"), _ask(server, "m")] == ["again", "again"]


def test_echo_answers_the_last_user_message() -> None:
    with FakeLLMServer() as server:
        server.script("m", echo())
        said = _ask(
            server,
            "m",
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
            {"role": "tool", "content": "{}"},
        )
    assert said == "second"


def test_the_script_of_any_model_answers_the_models_without_one() -> None:
    with FakeLLMServer() as server:
        server.script(ANY_MODEL, forever(reply("anyone")))
        server.script("m", [reply("mine")])
        assert [_ask(server, "m"), _ask(server, "other")] == ["mine", "anyone"]


def test_a_script_file_names_each_models_steps(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            {
                "m": [
                    {"tool_call": "read_file", "arguments": {"path": "facts.txt"}},
                    {"reply": "Done."},
                    {"status": 503},
                    {"forever": {"reply": "again"}},
                ],
                "*": {"echo": True},
            }
        )
    )
    scripts = read_script(path)
    with FakeLLMServer() as server:
        for model, script in scripts.items():
            server.script(model, script)
        body = {"model": "m", "messages": []}
        call = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10).json()
        assert call["choices"][0]["message"]["tool_calls"][0]["function"] == {
            "name": "read_file",
            "arguments": '{"path": "facts.txt"}',
        }
        assert _ask(server, "m") == "Done."
        failed = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)
        assert failed.status_code == 503
        assert [_ask(server, "m"), _ask(server, "m")] == ["again", "again"]
        assert _ask(server, "x", {"role": "user", "content": "hi"}) == "hi"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"m": [{"reply": 3}]}', "m[0]: {'reply': 3} is no step; write one of reply"),
        ('{"m": [{"reply": "a", "status": 500}]}', "m[0]: {'reply': 'a', 'status': 500} is no"),
        ('{"m": [{"status": 42}]}', "m[0]: {'status': 42} is no step"),
        ('{"m": [{"forever": {"forever": {"reply": "a"}}}]}', "m[0].forever: {'forever':"),
        ('{"m": {"reply": "a"}}', "m: a script is a list of steps, or one forever or echo step"),
        ('["m"]', "write an object naming each model's script"),
        ('{"m": [NaN]}', "not JSON (m.0: NaN is not a finite number"),
        ("[" * 100_000, "not JSON"),
    ],
    ids=[
        "not-text",
        "two-kinds",
        "no-status",
        "nested-forever",
        "lone-step",
        "list",
        "nan",
        "deep",
    ],
)
def test_a_script_file_that_says_no_steps_is_refused_with_where(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "script.json"
    path.write_text(text)
    with pytest.raises(ContractError) as refused:
        read_script(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert problem in str(refused.value)


def test_a_script_file_is_read_up_to_a_bound(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"m": [' + ", ".join(['{"reply": "a"}'] * 100_000) + "]}")
    with pytest.raises(ContractError, match="over 1,048,576 bytes"):
        read_script(path)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_command_line_serves_until_ctrl_c(stop: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "loopengine.testing", "--echo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = next_line(process)
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
        assert url is not None, line
        assert "every model echoes the last user message" in line
        body = {"model": "qwen3:1.7b", "messages": [{"role": "user", "content": "hello"}]}
        answer = httpx.post(f"{url[0]}/chat/completions", json=body, timeout=10).json()
        assert answer["choices"][0]["message"]["content"] == "hello"
        process.send_signal(stop)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert (process.returncode, out, err) == (0, "stopped\n", "")


def test_the_command_line_refuses_a_bad_script_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text('{"m": [{"say": "hi"}]}')
    done = subprocess.run(
        [sys.executable, "-m", "loopengine.testing", "script.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: script.json: m[0]: {'say': 'hi'} is no step; write one of reply, tool_call "
        "(with arguments), status, echo or forever\n"
    )


def test_the_command_line_says_when_its_port_is_taken() -> None:
    with FakeLLMServer() as server:
        port = server.base_url.rsplit(":", 1)[1].split("/")[0]
        done = subprocess.run(
            [sys.executable, "-m", "loopengine.testing", "--echo", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: port {port} cannot be used: ")
    assert done.stderr.count("\n") == 1

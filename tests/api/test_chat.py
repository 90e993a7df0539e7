"""Chat over the daemon's API: ``POST /chat`` and the OpenAI-compatible ``/v1`` endpoints, on a
real daemon whose cluster is the scripted server, driven with httpx and the official client."""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from loopengine.api import _chat
from loopengine.testing import FakeLLMServer, reply, tool_call, tool_calls
from tests.daemon.conftest import Daemon, Workspace
from tests.test_cli_chat import RESPONSE_KEYS

TOKEN = "chat-api-token-7"
SIMPLE = "Capital of France?"
REFLEXIVE = "Analyse the facts file and explain what it says"


@dataclass
class Served:
    workspace: Workspace
    daemon: Daemon
    api: str
    llm: FakeLLMServer

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.api + "/v1", api_key=TOKEN, max_retries=0)

    def post(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {TOKEN}", **headers}
        return httpx.post(self.api + path, json=body, headers=headers, timeout=30)

    def script_reflexive(self) -> None:
        self.llm.script("ol1", [tool_call("read_file", {"path": "facts.txt"}), reply("7 phases.")])
        self.llm.script("m1", [reply("Loops have seven phases.")])
        self.llm.script("m2", [reply("Reviewed: loops have seven phases.")])


def _start(root: Path, config: str) -> tuple[Workspace, Daemon, str]:
    (root / "loops").mkdir()
    (root / "loopengine.yaml").write_text(config)
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}", "NO_COLOR": "1"}
    env["API_TOKEN"] = TOKEN
    env.pop("LOOPENGINE_CONFIG", None)
    env.pop("LOOPENGINE_API_TOKEN", None)
    workspace = Workspace(root, env)
    daemon = workspace.start()
    ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
    return workspace, daemon, str(ready["api"])


@contextmanager
def chat_daemon(root: Path) -> Iterator[Served]:
    """A daemon in ``root`` with a token whose cluster (OL1, M1, M2) is one scripted server,
    stopped when the block ends."""
    (root / "facts.txt").write_text("Loops have seven phases.")
    with FakeLLMServer() as llm:
        nodes = "\n".join(
            f"    {name}: {{base_url: '{llm.base_url}', model: {name.lower()}, timeout_s: 5}}"
            for name in ("OL1", "M1", "M2")
        )
        config = (
            'daemon: {port: 0, token: "${ secret.API_TOKEN }"}\n'
            f"cluster:\n  nodes:\n{nodes}\n  routing:\n    default: [OL1, M1]\n    trivia: [M2]\n"
            "autolearn: {explore: 0}\n"  # every message to the node its test scripted
        )
        workspace, daemon, api = _start(root, config)
        try:
            yield Served(workspace, daemon, api, llm)
        finally:
            assert daemon.stop() == 0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with chat_daemon(tmp_path_factory.mktemp("chat")) as served:
        yield served


def _error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return body["error"]


def _chain(summary: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(stage["node"], stage["status"], stage["turns"]) for stage in summary["chain"]]


def test_models_are_the_chain_and_simple_mode(served: Served) -> None:
    listed = served.client().models.list()
    assert sorted(model.id for model in listed.data) == [
        "loopengine-reflexive",
        "loopengine-simple",
    ]
    assert {model.owned_by for model in listed.data} == {"loopengine"}


def test_the_openapi_document_lists_the_chat_endpoints(served: Served) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    document = httpx.get(served.api + "/openapi.json", headers=headers, timeout=10).json()
    assert {"/chat", "/v1/chat/completions", "/v1/models"} <= set(document["paths"])
    completion = document["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]
    assert completion["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Completion"
    }


def test_chat_answers_with_the_chain_summary(served: Served) -> None:
    served.llm.script("ol1", [reply("Paris.")])
    response = served.post("/chat", {"message": SIMPLE})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == RESPONSE_KEYS
    assert (body["reply"], body["mode"], _chain(body)) == ("Paris.", "simple", [("OL1", "ok", 1)])


def test_chat_is_routed_by_the_category_given(served: Served) -> None:
    served.llm.script("m2", [reply("Paris.")])
    body = served.post("/chat", {"message": SIMPLE, "category": "trivia"}).json()
    assert (body["reply"], _chain(body)) == ("Paris.", [("M2", "ok", 1)])


def test_an_input_the_chat_loop_refuses_is_a_422(served: Served) -> None:
    response = served.post("/chat", {"message": SIMPLE, "user": "a\x1eb"})
    assert response.status_code == 422
    assert "user" in _error(response)["message"]


def test_chat_in_a_forced_mode_runs_the_whole_chain(served: Served) -> None:
    served.script_reflexive()
    body = served.post("/chat", {"message": SIMPLE, "mode": "reflexive"}).json()
    assert body["mode"] == "reflexive"
    assert [stage["node"] for stage in body["chain"]] == ["OL1", "M1", "M2"]
    assert [tool["name"] for tool in body["tools_used"]] == ["read_file"]


@pytest.mark.parametrize(
    ("model", "message"), [("loopengine-simple", SIMPLE), ("loopengine-reflexive", REFLEXIVE)]
)
def test_a_completion_answers_what_the_cli_answers(
    served: Served, model: str, message: str
) -> None:
    def script() -> None:
        if model == "loopengine-simple":
            served.llm.script("ol1", [reply("Paris.")])
        else:
            served.script_reflexive()

    script()
    printed = served.workspace.json("chat", message)
    script()
    completion = served.client().chat.completions.create(
        model=model, messages=[{"role": "user", "content": message}]
    )
    assert completion.object == "chat.completion"
    assert completion.model == model
    assert completion.choices[0].message.content == printed["reply"]
    assert completion.choices[0].finish_reason == "stop"
    summary = (completion.model_extra or {})["loopengine"]
    assert (summary["mode"], summary["turns"]) == (printed["mode"], printed["turns"])
    assert _chain(summary) == _chain(printed)
    assert completion.usage is not None
    assert completion.usage.total_tokens == 15 * printed["turns"]


def test_a_streamed_completion_sends_the_role_the_reply_and_the_end(served: Served) -> None:
    served.llm.script("ol1", [reply("Paris.")])
    stream = served.client().chat.completions.create(
        model="loopengine-simple", messages=[{"role": "user", "content": SIMPLE}], stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Paris."
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert (chunks[-1].model_extra or {})["loopengine"]["mode"] == "simple"


def test_the_stream_tells_the_chain_progress_in_comments(served: Served) -> None:
    served.script_reflexive()
    body = {"model": "loopengine-reflexive", "messages": [{"role": "user", "content": SIMPLE}]}
    response = served.post("/v1/chat/completions", {**body, "stream": True})
    assert response.headers["content-type"].startswith("text/event-stream")
    comments = [line for line in response.text.splitlines() if line.startswith(": ")]
    stages = [json.loads(c.split(" ", 2)[2]) for c in comments if c.startswith(": llm.stage ")]
    assert [(s["node"], s["role"]) for s in stages] == [
        ("OL1", "research"),
        ("M1", "analysis"),
        ("M2", "review"),
    ]
    assert any(c.startswith(": llm.tool ") and '"read_file"' in c for c in comments)
    events = [line for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["loopengine"]["session_id"] == response.headers["x-session-id"]


def test_a_session_header_continues_the_thread(served: Served) -> None:
    served.llm.script("ol1", [reply("Hello Ada."), reply("Your name is Ada.")])
    client = served.client()
    first = client.chat.completions.with_raw_response.create(
        model="loopengine-simple", messages=[{"role": "user", "content": "My name is Ada"}]
    )
    session = first.headers["x-session-id"]
    second = client.chat.completions.create(
        model="loopengine-simple",
        messages=[{"role": "user", "content": "What is my name?"}],
        extra_headers={"X-Session-ID": session},
    )
    assert (second.model_extra or {})["loopengine"]["session_id"] == session
    asked = served.llm.requests_for("ol1")[-1]["messages"]
    assert [m["content"] for m in asked if m["role"] != "system"] == [
        "My name is Ada",
        "Hello Ada.",
        "What is my name?",
    ]


def test_the_user_field_names_the_session(served: Served) -> None:
    served.llm.script("ol1", [reply("Hi.")])
    completion = served.client().chat.completions.create(
        model="loopengine-simple", messages=[{"role": "user", "content": "Hi"}], user="grace-7"
    )
    assert (completion.model_extra or {})["loopengine"]["session_id"] == "grace-7"


def test_only_the_last_user_message_is_answered(served: Served) -> None:
    served.llm.script("ol1", [reply("Rome.")])
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of Spain?"},
        {"role": "assistant", "content": "Madrid."},
        {"role": "user", "content": [{"type": "text", "text": "Capital of Italy?"}]},
    ]
    served.client().chat.completions.create(model="loopengine-simple", messages=messages)
    asked = served.llm.requests_for("ol1")[-1]["messages"]
    assert [m["content"] for m in asked if m["role"] != "system"] == ["Capital of Italy?"]


def test_an_unknown_model_is_a_404_naming_the_models(served: Served) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    response = served.post("/v1/chat/completions", body)
    assert response.status_code == 404
    error = _error(response)
    assert error["code"] == "not_found"
    assert "loopengine-reflexive" in error["message"]
    with pytest.raises(openai.NotFoundError, match="no model 'gpt-4o'"):
        served.client().chat.completions.create(model="gpt-4o", messages=body["messages"])


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        ([], "messages"),
        ([{"role": "system", "content": "Be brief."}], "no user message"),
        ([{"role": "user", "content": "  "}], "empty"),
        ([{"role": "user", "content": "x" * 100_001}], "messages"),
    ],
)
def test_a_request_without_a_message_is_a_422(
    served: Served, messages: list[dict[str, Any]], said: str
) -> None:
    response = served.post(
        "/v1/chat/completions", {"model": "loopengine-simple", "messages": messages}
    )
    assert response.status_code == 422
    assert said in _error(response)["message"]


def test_a_chain_without_a_reply_is_a_503_with_its_reasons(served: Served) -> None:
    served.llm.script("ol1", [reply("")])
    response = served.post("/chat", {"message": SIMPLE})
    assert response.status_code == 503
    assert _error(response)["message"] == "no reply (OL1: ok)"


def test_a_stream_without_a_reply_ends_with_an_error_event(served: Served) -> None:
    served.llm.script("ol1", [reply("")])
    stream = served.client().chat.completions.create(
        model="loopengine-simple", messages=[{"role": "user", "content": SIMPLE}], stream=True
    )
    with pytest.raises(openai.APIError, match=r"no reply \(OL1: ok\)"):
        list(stream)


HOSTILE_PATTERNS = [
    "x{999999999}",
    "x{10000000}",
    "(x{1000}){1000}",
    "(?:(?:x{100}){100}){100}",
    "x{1000000,2000000}",
    r"[\x00-\U0010ffff]{1000000}",
    "(" * 300 + "x" + ")" * 300,
    "x" * 5000,
    "(?x)x{1 000 000 000}",
    r"(?f)[\x00-\U0010ffff]{5000}",
]
"""What a model may ask ``search_files`` to compile: gigabytes each, unrolled."""


def _status(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` size, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} in /proc/{pid}/status")


@contextmanager
def _address_space_capped(pid: int, extra: int) -> Iterator[None]:
    """The process may map ``extra`` bytes more than now: a pattern compiled after all fails
    with a MemoryError instead of exhausting the machine."""
    soft, hard = resource.prlimit(pid, resource.RLIMIT_AS)
    resource.prlimit(pid, resource.RLIMIT_AS, (_status(pid, "VmSize") + extra, hard))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_AS, (soft, hard))


def _hostile_searches(served: Served) -> list[dict[str, Any]]:
    """The tools the model used in one round: an ordinary search, then every hostile one."""
    searches = [("search_files", {"pattern": "seven"})]
    searches += [("search_files", {"pattern": pattern}) for pattern in HOSTILE_PATTERNS]
    served.llm.script("ol1", [tool_calls(*searches), reply("Searched.")])
    with _address_space_capped(served.daemon.process.pid, 2 * 1024**3):
        response = served.post("/chat", {"message": SIMPLE})
    assert response.status_code == 200
    used: list[dict[str, Any]] = response.json()["tools_used"]
    return used


def test_hostile_patterns_leave_the_daemons_memory_as_it_was(served: Served) -> None:
    pid = served.daemon.process.pid
    start = _status(pid, "VmRSS")
    _hostile_searches(served)
    assert _status(pid, "VmRSS") - start < 100 * 1024**2


def test_the_model_reads_why_its_pattern_is_refused_and_ordinary_ones_search(
    served: Served,
) -> None:
    ordinary, *hostile = _hostile_searches(served)
    assert "facts.txt" in [match["file"] for match in ordinary["result"]]
    assert [tool["ok"] for tool in hostile] == [False] * len(HOSTILE_PATTERNS)
    for tool in hostile:
        assert tool["error"].startswith(("ValueError: the pattern", "ValueError: the inline flag"))


def test_the_model_reads_neither_the_config_nor_the_store(served: Served) -> None:
    calls = [
        ("read_file", {"path": "loopengine.yaml"}),
        ("read_file", {"path": "store.db"}),
        ("read_file", {"path": "store.db-wal"}),
        ("list_dir", {"path": "."}),
        ("search_files", {"pattern": r"secret\.API_TOKEN|SQLite format"}),
    ]
    served.llm.script("ol1", [tool_calls(*calls), reply("Nothing there.")])
    used = served.post("/chat", {"message": SIMPLE}).json()["tools_used"]
    refused = "is not open to tools: hidden files, the config and the store never are"
    assert [tool["error"].split(" ", 2)[-1] for tool in used[:3]] == [refused] * 3
    listed = {entry["name"] for entry in used[3]["result"]}
    assert "facts.txt" in listed
    assert not listed & {"loopengine.yaml", "store.db", "store.db-wal", "store.db-shm"}
    assert used[4]["result"] == []


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/chat"), ("POST", "/v1/chat/completions"), ("GET", "/v1/models")],
)
def test_the_chat_endpoints_need_the_token(served: Served, method: str, path: str) -> None:
    response = httpx.request(method, served.api + path, json={}, timeout=10)
    assert response.status_code == 401
    assert _error(response)["code"] == "unauthorized"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=served.api + "/v1", api_key="wrong", max_retries=0).models.list()


def test_without_llm_nodes_chat_is_a_503_saying_what_to_configure(
    tmp_path: Path,
) -> None:
    _, daemon, api = _start(tmp_path, 'daemon: {port: 0, token: "${ secret.API_TOKEN }"}\n')
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        body = {"model": "loopengine-simple", "messages": [{"role": "user", "content": "hi"}]}
        for path, sent in (("/chat", {"message": "hi"}), ("/v1/chat/completions", body)):
            response = httpx.post(api + path, json=sent, headers=headers, timeout=10)
            assert response.status_code == 503
            assert _error(response)["message"].startswith("no LLM nodes configured")
    finally:
        assert daemon.stop() == 0


@pytest.mark.anyio
async def test_a_slow_stream_sends_keep_alive_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_chat, "KEEP_ALIVE_S", 0.02)

    async def produce(sender: MemoryObjectSendStream[str]) -> None:
        await anyio.sleep(0.15)
        await sender.send("data: [DONE]\n\n")

    def endpoint(request: Request) -> _chat.EventStream:
        return _chat.EventStream(produce, {})

    app = Starlette(routes=[Route("/", endpoint)])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        text = (await client.get("/")).text
    assert text.count(": keep-alive\n\n") >= 2
    assert text.endswith("data: [DONE]\n\n")

"""Conversations: a round commits while the next call is made, and nothing is acted on before the
commit is known; a thread changed by another writer is rebuilt from the store and asked again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.builtins import builtin_tools
from loopengine.contract import Node
from loopengine.errors import StorageError
from loopengine.llm import ChatClient, Hooks, RoundCommit, Toolbox, run_agent
from loopengine.skills import ATTRIBUTE, tool
from loopengine.store import Store, threads
from loopengine.testing import FakeLLMServer, Response, reply, tool_call
from loopengine.threads import Conversation

pytestmark = pytest.mark.anyio
USER = {"role": "user", "content": "What is in the folder?"}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store.open(f"sqlite:///{tmp_path / 'chat.db'}") as opened:
        yield opened


@pytest.fixture
async def client(server: FakeLLMServer) -> AsyncIterator[ChatClient]:
    node = Node.model_validate({"base_url": server.base_url, "model": "m", "timeout_s": 5})
    async with httpx.AsyncClient() as http:
        yield ChatClient("node", node, http)


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    (tmp_path / "facts.txt").write_text("Loops have seven phases.")
    return Toolbox(builtin_tools(tmp_path, "sqlite://"))


def _numbered_call(name: str) -> Response:
    """A tool call with the id ``call_0``, as servers that number calls per reply send it."""
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return Response({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


async def _stored(store: Store, session: str) -> list[dict[str, Any]]:
    return [m.as_json() for m in await store.read(threads.load_thread, session)]


async def _asked(store: Store) -> Conversation:
    """Session s1 with the user's question in it."""
    conversation = await Conversation.open(store, "s1")
    await conversation.append([USER], "user")
    return conversation


def _hook(conversation: Conversation) -> Any:
    operations = iter(range(1000))
    return lambda messages: conversation.commit(messages, f"round-{next(operations)}")


async def test_every_round_is_in_the_store_when_the_stage_ends(
    server: FakeLLMServer, client: ChatClient, toolbox: Toolbox, store: Store
) -> None:
    server.script(
        "m",
        [tool_call("list_dir"), tool_call("read_file", {"path": "facts.txt"}), reply("Seven.")],
    )
    conversation = await _asked(store)
    report = await run_agent(
        client, conversation.thread, toolbox, max_turns=4, hooks=Hooks(on_round=_hook(conversation))
    )
    assert report.reply == "Seven."
    assert await _stored(store, "s1") == conversation.thread
    assert [m["role"] for m in conversation.thread] == ["user", *["assistant", "tool"] * 2]


async def test_a_reopened_conversation_holds_what_was_committed(store: Store) -> None:
    first = await Conversation.open(store, "s1")
    await first.append([USER], "user")
    await first.append([{"role": "assistant", "content": "Two files."}], "reply")
    again = await Conversation.open(store, "s1")
    assert (again.version, again.thread) == (2, first.thread)


async def test_a_thread_another_writer_changed_is_rebuilt_and_the_call_made_again(
    server: FakeLLMServer, client: ChatClient, toolbox: Toolbox, store: Store
) -> None:
    server.script("m", [tool_call("list_dir"), reply("stale answer"), reply("Fresh answer.")])
    mine = await _asked(store)
    elsewhere = await Conversation.open(store, "s1")
    await elsewhere.append([{"role": "user", "content": "Also: the date?"}], "other")
    report = await run_agent(
        client, mine.thread, toolbox, max_turns=4, hooks=Hooks(on_round=_hook(mine))
    )
    assert report.reply == "Fresh answer."
    speculative, again = server.requests_for("m")[1:]
    assert "Also: the date?" not in json.dumps(speculative["messages"])
    assert "Also: the date?" in json.dumps(again["messages"])
    stored = await _stored(store, "s1")
    assert [m["role"] for m in stored] == ["user", "user", "assistant", "tool"]
    assert mine.thread == stored


async def test_nothing_is_acted_on_when_a_round_fails_to_commit(
    server: FakeLLMServer, client: ChatClient
) -> None:
    noted: list[str] = []

    @tool("note")
    def note(text: str) -> str:
        """Write a note down."""
        noted.append(text)
        return text

    server.script("m", [tool_call("note", {"text": "first"}), tool_call("note", {"text": "next"})])

    async def refused() -> None:
        raise StorageError("database error: disk I/O error")

    def hook(messages: list[dict[str, Any]]) -> RoundCommit:
        return RoundCommit([USER, *messages], refused())

    toolbox = Toolbox([getattr(note, ATTRIBUTE)])
    with pytest.raises(StorageError, match="disk I/O error"):
        await run_agent(client, [USER], toolbox, max_turns=4, hooks=Hooks(on_round=hook))
    assert len(server.requests_for("m")) == 2
    assert noted == ["first"]


async def test_servers_that_number_calls_per_reply_keep_every_result(
    server: FakeLLMServer, client: ChatClient, toolbox: Toolbox, store: Store
) -> None:
    server.script("m", [_numbered_call("list_dir"), _numbered_call("read_file"), reply("Done.")])
    conversation = await _asked(store)
    await run_agent(
        client, conversation.thread, toolbox, max_turns=4, hooks=Hooks(on_round=_hook(conversation))
    )
    stored = await _stored(store, "s1")
    answered = [m["tool_call_id"] for m in stored if m["role"] == "tool"]
    called = [c["id"] for m in stored for c in m.get("tool_calls") or ()]
    assert len(set(answered)) == 2
    assert answered == called


async def test_a_call_id_from_before_the_window_is_still_renamed(store: Store) -> None:
    conversation = Conversation(store, "s1", window=2)
    for result in ("first", "second"):
        call = {"id": "call_0", "type": "function", "function": {"name": "list_dir"}}
        answer = {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(result)}
        await conversation.append([{"role": "user", "content": "again"}], f"user-{result}")
        await conversation.append(
            [{"role": "assistant", "content": None, "tool_calls": [call]}, answer], result
        )
    stored = await _stored(store, "s1")
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in stored if m["role"] == "tool"}
    assert sorted(results.values()) == ["first", "second"]

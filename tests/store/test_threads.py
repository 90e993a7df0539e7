"""Thread rows: the messages one operation put in a thread, as the thread shows them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.store import Store, threads
from loopengine.threads import new_batch

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store.open(f"sqlite:///{tmp_path / 'threads.db'}") as opened:
        await opened.write(threads.append_batch, _append(_round("call_a"), "op-1"))
        await opened.write(threads.append_batch, _append(_round("call_b"), "op-2"))
        yield opened


def _append(messages: list[dict[str, Any]], operation: str) -> threads.Batch:
    return new_batch("s1", messages, operation_id=operation, now=1.0)


def _round(call_id: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"result": call_id})},
    ]


async def test_an_operation_s_messages_are_its_own_in_order(store: Store) -> None:
    thread = await store.read(threads.load_thread, "s1")
    second = await store.read(threads.operation_messages, "s1", "op-2")
    assert second == thread[2:]


async def test_an_operation_that_added_nothing_has_no_messages(store: Store) -> None:
    await store.write(threads.append_batch, _append(_round("call_a")[1:], "op-3"))
    assert await store.read(threads.operation_messages, "s1", "op-3") == []


@pytest.mark.parametrize(("session", "operation"), [("s1", "op-9"), ("s2", "op-1")])
async def test_an_operation_of_no_thread_has_no_messages(
    store: Store, session: str, operation: str
) -> None:
    assert await store.read(threads.operation_messages, session, operation) == []


async def test_a_message_reads_in_openai_shape_and_tells_of_its_tool_s_run_only_with_meta(
    store: Store,
) -> None:
    tool = {"role": "tool", "tool_call_id": "call_c", "content": "{}", "success": True}
    tool |= {"timestamp": "2026-11-23T18:50:02Z", "error": "slow", "duration_ms": 12.5}
    call = {"id": "call_c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    await store.write(threads.append_batch, _append([asked, tool], "op-3"))

    stored = (await store.read(threads.operation_messages, "s1", "op-3"))[1]

    assert json.dumps(stored.as_json()) == json.dumps(
        {"role": "tool", "content": "{}", "tool_call_id": "call_c"}
    )
    assert list(stored.as_json(meta=True)) == [
        *("role", "content", "tool_call_id", "timestamp", "success", "error", "duration_ms")
    ]


async def test_the_sessions_whose_threads_grew_last_come_first(store: Store) -> None:
    for session, now in (("s2", 3.0), ("s3", 2.0)):
        batch = new_batch(session, [{"role": "user", "content": "hi"}], operation_id="op", now=now)
        await store.write(threads.append_batch, batch)
    recent = await store.read(threads.recent_sessions, 2)
    assert [(row.id, row.updated_at) for row in recent] == [("s2", 3.0), ("s3", 2.0)]
    assert [row.id for row in await store.read(threads.recent_sessions, 5)] == ["s2", "s3", "s1"]

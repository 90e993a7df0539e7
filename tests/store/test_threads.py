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

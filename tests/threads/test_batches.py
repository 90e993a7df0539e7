"""Threads: atomic idempotent batches, ETags, validation, isolation, safe pruning."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopengine._secrets import remember
from loopengine.errors import ThreadError
from loopengine.store import Store, threads
from loopengine.threads import mask_pii, new_batch, prune, with_fresh_call_ids

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store.open(f"sqlite:///{tmp_path / 'threads.db'}") as opened:
        yield opened


def _round(call_id: str, result: Any = "ok") -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"result": result})},
    ]


def _append(
    session: str, messages: list[dict[str, Any]], operation: str, **options: Any
) -> threads.Batch:
    return new_batch(session, messages, operation_id=operation, now=1.0, **options)


async def _thread(store: Store, session: str, *, meta: bool = False) -> list[dict[str, Any]]:
    return [m.as_json(meta=meta) for m in await store.read(threads.load_thread, session)]


async def test_a_batch_is_stored_and_rebuilt_in_order(store: Store) -> None:
    user = [{"role": "user", "content": "list it"}]
    await store.write(threads.append_batch, _append("s1", user, "op-0"))
    result = await store.write(threads.append_batch, _append("s1", _round("call_a"), "op-1"))
    assert (result.applied, result.version, result.stored) == (True, 2, 2)
    thread = await _thread(store, "s1")
    assert [m["role"] for m in thread] == ["user", "assistant", "tool"]
    assert thread[2]["tool_call_id"] == "call_a"


async def test_a_replayed_batch_writes_nothing(store: Store) -> None:
    await store.write(threads.append_batch, _append("s1", _round("call_a"), "op-1"))
    replay = await store.write(threads.append_batch, _append("s1", _round("call_a"), "op-1"))
    assert (replay.applied, replay.version) == (False, 1)
    assert len(await _thread(store, "s1")) == 2


async def test_the_same_key_with_another_body_is_422(store: Store) -> None:
    await store.write(threads.append_batch, _append("s1", _round("call_a"), "op-1"))
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", _round("call_b"), "op-1"))
    assert (caught.value.status, caught.value.code) == (422, "idempotency_conflict")


async def test_a_stale_if_match_is_412(store: Store) -> None:
    await store.write(threads.append_batch, _append("s1", _round("call_a"), "op-1"))
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", _round("call_b"), "op-2", if_match=0))
    assert caught.value.status == 412


async def test_a_missing_if_match_when_required_is_428(store: Store) -> None:
    with pytest.raises(ThreadError) as caught:
        await store.write(
            threads.append_batch, _append("s1", _round("call_a"), "op-1", require_if_match=True)
        )
    assert caught.value.status == 428


async def test_a_current_if_match_is_accepted(store: Store) -> None:
    await store.write(threads.append_batch, _append("s1", _round("call_a"), "op-1"))
    result = await store.write(
        threads.append_batch, _append("s1", _round("call_b"), "op-2", if_match=1)
    )
    assert result.version == 2


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"role": "tool", "tool_call_id": "", "content": "{}"}, "missing_tool_call_id"),
        ({"role": "tool", "tool_call_id": "nope", "content": "{}"}, "unknown_tool_call_id"),
        ({"role": "tool", "tool_call_id": "call_a", "content": "not json"}, "invalid_tool_content"),
        ({"role": "robot", "content": "hi"}, "invalid_role"),
        (
            {"role": "tool", "tool_call_id": "call_a", "name": "read_file", "content": "{}"},
            "tool_name_mismatch",
        ),
    ],
)
async def test_invalid_messages_are_refused_before_anything_is_stored(
    store: Store, message: dict[str, Any], code: str
) -> None:
    batch = [_round("call_a")[0], message]
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", batch, "op-1"))
    assert (caught.value.status, caught.value.code) == (422, code)
    assert await _thread(store, "s1") == []


def _called(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "call_a", "function": {"name": "list_dir", "arguments": arguments}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]}]


@pytest.mark.parametrize("arguments", ["{bad", "", "[1, 2]", "null", '"text"', None, [1]], ids=repr)
async def test_tool_call_arguments_that_are_no_json_object_are_refused(
    store: Store, arguments: Any
) -> None:
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", _called(arguments), "op-1"))
    assert (caught.value.status, caught.value.code) == (422, "invalid_tool_arguments")
    assert str(caught.value).startswith("messages[0].tool_calls[0]: arguments must be a JSON")
    assert await _thread(store, "s1") == []


@pytest.mark.parametrize("arguments", ['{"path": "."}', {"path": "."}], ids=["text", "object"])
async def test_tool_call_arguments_as_json_object_text_or_object_are_stored(
    store: Store, arguments: Any
) -> None:
    await store.write(threads.append_batch, _append("s1", _called(arguments), "op-1"))
    [stored] = await _thread(store, "s1")
    assert stored["tool_calls"][0]["function"]["arguments"] == arguments


async def test_a_tool_call_without_a_function_name_is_refused(store: Store) -> None:
    call = {"id": "call_a", "function": {"name": "", "arguments": "{}"}}
    batch = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", batch, "op-1"))
    assert (caught.value.status, caught.value.code) == (422, "invalid_tool_call")


async def test_a_result_naming_another_tool_than_an_earlier_call_is_refused(
    store: Store,
) -> None:
    await store.write(threads.append_batch, _append("s1", _round("call_a")[:1], "op-1"))
    result = {**_round("call_a")[1], "name": "read_file"}
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", [result], "op-2"))
    assert caught.value.code == "tool_name_mismatch"
    assert "name 'read_file' is not the tool call 'call_a' asked for ('list_dir')" in str(
        caught.value
    )
    named = {**_round("call_a")[1], "name": "list_dir"}
    assert (await store.write(threads.append_batch, _append("s1", [named], "op-3"))).stored == 1


async def test_a_tool_message_keeps_what_it_says_of_the_run(store: Store) -> None:
    said = {
        "timestamp": "2026-11-23T18:50:02.114+00:00",
        "relance_index": 3,
        "success": False,
        "error": "the folder is gone",
        "duration_ms": 12.5,
    }
    result = {**_round("call_a")[1], **said}
    await store.write(
        threads.append_batch, _append("s1", [_round("call_a")[0], result], "op-1", relance_index=1)
    )
    thread = await _thread(store, "s1", meta=True)
    assert thread[1] == result
    assert await _thread(store, "s1") == _round("call_a")


async def test_a_tool_messages_success_reads_back_as_a_boolean(store: Store) -> None:
    result = {**_round("call_a")[1], "success": True}
    await store.write(threads.append_batch, _append("s1", [_round("call_a")[0], result], "op-1"))
    _, tool = await _thread(store, "s1", meta=True)
    assert tool["success"] is True


async def test_a_tool_message_without_a_relance_index_keeps_the_batchs(store: Store) -> None:
    await store.write(
        threads.append_batch, _append("s1", _round("call_a"), "op-1", relance_index=2)
    )
    assistant, tool = await _thread(store, "s1", meta=True)
    assert ("relance_index" in assistant, tool["relance_index"]) == (False, 2)


async def test_a_known_secret_never_enters_a_thread(store: Store) -> None:
    remember("thread-secret-5e1d9a")
    said = [{"role": "assistant", "content": "the key is thread-secret-5e1d9a"}]
    await store.write(threads.append_batch, _append("s1", said, "op-1"))
    thread = await _thread(store, "s1")
    assert thread[0]["content"] == "the key is ***"


async def test_a_known_secret_never_enters_a_tool_messages_error(store: Store) -> None:
    remember("thread-secret-77c0b2")
    failed = {**_round("call_a")[1], "success": False, "error": "denied: thread-secret-77c0b2"}
    await store.write(threads.append_batch, _append("s1", [_round("call_a")[0], failed], "op-1"))
    thread = await _thread(store, "s1", meta=True)
    assert thread[1]["error"] == "denied: ***"


async def test_two_results_for_one_call_in_a_batch_are_422(store: Store) -> None:
    batch = [*_round("call_a"), _round("call_a", "again")[1]]
    with pytest.raises(ThreadError) as caught:
        await store.write(threads.append_batch, _append("s1", batch, "op-1"))
    assert (caught.value.status, caught.value.code) == (422, "duplicate_tool_result")
    assert "already answered by messages[1]" in str(caught.value)


async def test_a_message_of_another_session_never_enters(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    await store.write(
        threads.append_batch, _append("alice", _round("call_x", "alice's secret"), "op-1")
    )
    leaked = {**_round("call_x", "alice's secret")[1], "session_id": "alice"}
    with pytest.raises(ThreadError) as caught:
        await store.write(
            threads.append_batch, _append("bob", [_round("call_x")[0], leaked], "op-1")
        )
    assert caught.value.status == 409
    assert await _thread(store, "bob") == []
    assert "refused a message of session alice in session bob" in caplog.text


async def test_the_same_call_id_in_two_sessions_is_two_answers(store: Store) -> None:
    await store.write(threads.append_batch, _append("alice", _round("call_0", "for alice"), "op-1"))
    await store.write(threads.append_batch, _append("bob", _round("call_0", "for bob"), "op-1"))
    bob = await _thread(store, "bob")
    assert json.loads(bob[1]["content"]) == {"result": "for bob"}


def test_an_id_the_thread_holds_already_is_replaced_with_its_result() -> None:
    counter = iter(range(1000))
    fresh = with_fresh_call_ids(_round("call_0"), {"call_0"}, lambda: f"id{next(counter):07d}")
    assert fresh[0]["tool_calls"][0]["id"] == "id0000000"
    assert fresh[1]["tool_call_id"] == "id0000000"


def test_a_result_answering_an_earlier_call_keeps_its_id() -> None:
    late = [{"role": "tool", "tool_call_id": "call_0", "content": "{}"}]
    assert with_fresh_call_ids(late, {"call_0"}) == late


def test_pruning_never_separates_calls_from_their_results() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        *_round("a"),
        *_round("b"),
    ]
    kept = prune(messages, keep=1)
    assert [m["role"] for m in kept] == ["system", "assistant", "tool"]
    assert kept[1]["tool_calls"][0]["id"] == "b"


def test_pii_is_masked_in_logs() -> None:
    text = "mail ada@example.com key sk-abcdefghijklmnop phone +33 6 12 34 56 78"
    assert mask_pii(text) == "mail <email> key <secret> phone <phone>"

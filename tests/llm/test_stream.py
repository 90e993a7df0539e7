"""Streamed chunks become the one choice a plain call returns, whatever the server's habits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopengine.errors import LLMError
from loopengine.llm import Assembly, event_data, token_usage


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


def _assembled(*chunks: str) -> dict[str, Any]:
    assembly = Assembly()
    for data in chunks:
        assembly.feed(data)
    return assembly.choice()


@pytest.mark.parametrize(
    ("line", "data"),
    [
        ('data: {"a": 1}', '{"a": 1}'),
        ('data:{"a": 1}', '{"a": 1}'),
        ("data: [DONE]", "[DONE]"),
        (": keep-alive", None),
        ("event: message", None),
        ("", None),
    ],
)
def test_event_data_reads_only_data_lines(line: str, data: str | None) -> None:
    assert event_data(line) == data


def test_text_pieces_are_joined_and_returned_as_they_come() -> None:
    assembly = Assembly()
    pieces = [assembly.feed(_chunk({"role": "assistant"}))]
    pieces += [assembly.feed(_chunk({"content": part})) for part in ("Hel", "lo")]
    assembly.feed(_chunk({}, "stop"))
    assert pieces == ["", "Hel", "lo"]
    assert assembly.choice()["message"]["content"] == "Hello"
    assert assembly.choice()["finish_reason"] == "stop"


def test_call_arguments_are_joined_by_index() -> None:
    choice = _assembled(
        _chunk({"tool_calls": [{"index": 0, "id": "a1", "function": {"name": "read_file"}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "b2", "function": {"name": "list_dir"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]}),
        _chunk({}, "tool_calls"),
    )
    first, second = choice["message"]["tool_calls"]
    assert (first["id"], first["function"]) == (
        "a1",
        {"name": "read_file", "arguments": '{"path": "x"}'},
    )
    assert (second["id"], second["function"]["arguments"]) == ("b2", "")


def test_a_name_repeated_in_every_chunk_is_not_doubled() -> None:
    piece = {"index": 0, "id": "a1", "function": {"name": "list_dir", "arguments": "{}"}}
    choice = _assembled(_chunk({"tool_calls": [piece]}), _chunk({"tool_calls": [piece]}))
    (call,) = choice["message"]["tool_calls"]
    assert (call["id"], call["function"]["name"]) == ("a1", "list_dir")


def test_usage_and_reasoning_are_kept() -> None:
    assembly = Assembly()
    assembly.feed(_chunk({"reasoning_content": "thinking…"}))
    assembly.feed(json.dumps({"choices": [], "usage": {"total_tokens": 42}, "model": "q"}))
    assert assembly.usage == {"total_tokens": 42}
    assert assembly.model == "q"
    assert assembly.choice()["message"]["reasoning_content"] == "thinking…"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"error": {"message": "model unloaded"}}', "model unloaded"),
    ],
)
def test_a_broken_stream_says_what_broke(data: str, problem: str) -> None:
    with pytest.raises(LLMError, match=problem):
        Assembly().feed(data)


@pytest.mark.parametrize(
    "usage",
    [
        None,
        [],
        "12",
        {"prompt_tokens": "12"},
        {"prompt_tokens": -1},
        {"prompt_tokens": 1.5},
        {"prompt_tokens": True},
        {"prompt_tokens": 10**12},
        {"prompt_tokens": [1]},
    ],
)
def test_a_usage_that_is_not_token_counts_counts_nothing(usage: Any) -> None:
    assert token_usage(usage) == {}


def test_token_counts_are_kept_and_other_keys_dropped() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7, "cost": 9}
    assert token_usage(usage) == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def test_a_streamed_usage_that_is_not_counts_is_dropped() -> None:
    assembly = Assembly()
    assembly.feed(json.dumps({"choices": [], "usage": {"prompt_tokens": "x", "total_tokens": 5}}))
    assert assembly.usage == {"total_tokens": 5}

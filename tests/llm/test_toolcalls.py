"""Tool calls as small local models really send them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from loopengine.llm import new_call_id, parse_arguments, parse_reply

OFFERED = frozenset({"list_dir", "read_file", "query_db"})


def _choice(content: Any = None, tool_calls: Any = None, finish: str = "stop") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"message": message, "finish_reason": finish}


def _native(name: str, arguments: Any, call_id: Any = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _ids() -> Any:
    counter = iter(range(1000))
    return lambda: f"id{next(counter):07d}"


def test_a_plain_answer() -> None:
    reply = parse_reply(_choice("Paris."), OFFERED)
    assert (reply.content, reply.tool_calls, reply.overflow) == ("Paris.", (), False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"path": "."}', {"path": "."}),
        ({"path": "."}, {"path": "."}),
        ("", {}),
        (None, {}),
        ('{"path": "src", "depth": 2', {"path": "src", "depth": 2}),
        ('{"path": "sr', {"path": "sr"}),
    ],
)
def test_argument_shapes(raw: Any, expected: dict[str, Any]) -> None:
    reply = parse_reply(_choice(tool_calls=[_native("list_dir", raw)]), OFFERED)
    assert [c.arguments for c in reply.tool_calls] == [expected]


def test_truncated_arguments_are_repaired_and_said_so() -> None:
    (call,) = parse_reply(
        _choice(tool_calls=[_native("list_dir", '{"path": "a"')]), OFFERED
    ).tool_calls
    assert call.problem == "arguments were truncated JSON and were closed"


def test_concatenated_argument_objects_become_separate_calls() -> None:
    raw = '{"path": "a"}{"path": "b"}'
    calls = parse_reply(_choice(tool_calls=[_native("read_file", raw)]), OFFERED, _ids()).tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("read_file", {"path": "a"}),
        ("read_file", {"path": "b"}),
    ]
    assert calls[0].id == "call_1"
    assert calls[1].id != "call_1"


def test_unparseable_arguments_become_empty_with_a_problem() -> None:
    (call,) = parse_reply(_choice(tool_calls=[_native("list_dir", "path=.")]), OFFERED).tool_calls
    assert call.arguments == {}
    assert call.problem is not None
    assert call.problem.startswith("arguments are not JSON")


@pytest.mark.parametrize("missing", [None, ""])
def test_missing_ids_are_synthesised(missing: Any) -> None:
    (call,) = parse_reply(
        _choice(tool_calls=[_native("list_dir", "{}", missing)]), OFFERED
    ).tool_calls
    assert re.fullmatch(r"[A-Za-z0-9]{9}", call.id)


def test_two_calls_of_one_reply_never_share_an_id() -> None:
    calls = [_native("list_dir", "{}", "call_0"), _native("read_file", "{}", "call_0")]
    parsed = parse_reply(_choice(tool_calls=calls), OFFERED, _ids())
    assert [call.id for call in parsed.tool_calls] == ["call_0", "id0000000"]


def test_new_ids_are_nine_alphanumerics_and_differ() -> None:
    ids = {new_call_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids)


def test_raw_json_call_in_content() -> None:
    content = '{"name": "read_file", "arguments": {"path": "facts.txt"}}'
    reply = parse_reply(_choice(content), OFFERED)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("read_file", {"path": "facts.txt"})
    ]
    assert (reply.content, reply.text_calls) == ("", True)


def test_fenced_json_call_with_parameters_key() -> None:
    content = '```json\n{"name": "list_dir", "parameters": {"path": "."}}\n```'
    assert [c.arguments for c in parse_reply(_choice(content), OFFERED).tool_calls] == [
        {"path": "."}
    ]


def test_hermes_tool_call_tags() -> None:
    content = (
        'Let me look.\n<tool_call>{"name": "list_dir", "arguments": {"path": "."}}</tool_call>'
    )
    reply = parse_reply(_choice(content), OFFERED)
    assert [c.name for c in reply.tool_calls] == ["list_dir"]
    assert reply.content == "Let me look."


def test_function_parameter_tags() -> None:
    content = "<function=query_db><parameter=sql>SELECT 1</parameter><parameter=limit>5</parameter></function>"
    (call,) = parse_reply(_choice(content), OFFERED).tool_calls
    assert (call.name, call.arguments) == ("query_db", {"sql": "SELECT 1", "limit": 5})


def test_the_seed_bracket_syntax() -> None:
    content = 'I will read it. [TOOL:read_file:{"path": "facts.txt"}]'
    reply = parse_reply(_choice(content), OFFERED)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("read_file", {"path": "facts.txt"})
    ]
    assert reply.content == "I will read it."


def test_bracket_syntax_without_arguments() -> None:
    assert [c.arguments for c in parse_reply(_choice("[TOOL:list_dir]"), OFFERED).tool_calls] == [
        {}
    ]


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "move_file", "arguments": {}}',
        '<tool_call>{"name": "rm", "arguments": {}}</tool_call>',
        "[TOOL:move_file:{}]",
        "<function=move_file></function>",
    ],
)
def test_text_calls_only_count_for_offered_tools(content: str) -> None:
    reply = parse_reply(_choice(content), OFFERED)
    assert reply.tool_calls == ()
    assert reply.content == content


def test_native_calls_to_unknown_tools_are_kept_for_the_loop_to_answer() -> None:
    reply = parse_reply(_choice(tool_calls=[_native("move_file", "{}")]), OFFERED)
    assert [c.name for c in reply.tool_calls] == ["move_file"]


def test_think_blocks_are_stripped_before_parsing() -> None:
    content = '<think>maybe [TOOL:list_dir:{"path": "/"}]</think>The answer is 4.'
    reply = parse_reply(_choice(content), OFFERED)
    assert (reply.content, reply.tool_calls) == ("The answer is 4.", ())
    assert reply.reasoning == 'maybe [TOOL:list_dir:{"path": "/"}]'


def test_an_unclosed_think_block_is_all_thinking() -> None:
    reply = parse_reply(_choice("<think>still thinking when cut off", finish="length"), OFFERED)
    assert (reply.content, reply.overflow) == ("", True)


def test_length_with_empty_content_is_an_overflow_not_an_empty_answer() -> None:
    assert parse_reply(_choice("", finish="length"), OFFERED).overflow is True
    assert parse_reply(_choice("partial answer", finish="length"), OFFERED).overflow is False


def test_calls_go_back_into_the_thread_in_openai_shape() -> None:
    (call,) = parse_reply(
        _choice(tool_calls=[_native("list_dir", {"path": "."})]), OFFERED
    ).tool_calls
    assert call.as_message() == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "list_dir", "arguments": json.dumps({"path": "."})},
    }


def test_parse_arguments_of_a_non_object() -> None:
    mappings, problem = parse_arguments("[1, 2]")
    assert mappings == [{}]
    assert problem is not None

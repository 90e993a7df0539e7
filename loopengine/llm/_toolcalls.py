"""Tolerant tool-call parsing: what small local models actually send, turned into clean calls.

Pure: takes one chat completion choice and the names of the tools offered, returns the reply's
text (``<think>`` blocks removed), its tool calls, and whether the context overflowed.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from loopengine._json import JSONObject

if TYPE_CHECKING:
    from loopengine.store.threads import MessageToolCall

__all__ = ["ParsedReply", "ToolCall", "new_call_id", "parse_arguments", "parse_reply"]

_ALPHABET = string.ascii_letters + string.digits
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([\w.\-]+)>(.*?)</function>", re.DOTALL)
_PARAMETER_TAG = re.compile(r"<parameter=([\w.\-]+)>(.*?)</parameter>", re.DOTALL)
_BRACKET_TOOL = re.compile(r"\[TOOL:([\w.\-]+)(?::(.*?))?\](?!\])", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def new_call_id() -> str:
    """A tool-call id of 9 alphanumerics (what Mistral-style servers expect)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(9))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call: ``arguments`` is always a mapping; ``problem`` says what had to be repaired."""

    id: str
    name: str
    arguments: JSONObject
    problem: str | None = None

    def as_message(self) -> MessageToolCall:
        """The call as it goes back into the thread (OpenAI shape)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


@dataclass(frozen=True, slots=True)
class ParsedReply:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    finish_reason: str | None = None
    overflow: bool = False
    text_calls: bool = field(default=False)
    """True when the calls were written in the text rather than sent as ``tool_calls``."""


def _balanced(text: str) -> str:
    """Close what a truncated JSON object left open (strings, arrays, objects)."""
    closers: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
    repaired = text + ('"' if in_string else "")
    repaired = re.sub(r",\s*$", "", repaired)
    return repaired + "".join(reversed(closers))


def _objects(text: str) -> list[Any]:
    """Every JSON value in ``text``, for ``{…}{…}`` written back to back."""
    decoder = json.JSONDecoder()
    found, index = [], 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        value, index = decoder.raw_decode(text, index)
        found.append(value)
    return found


def parse_arguments(raw: Any) -> tuple[list[JSONObject], str | None]:
    """Arguments as sent (JSON, object, empty, truncated, ``{…}{…}``) → one mapping per call."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return [{}], None
    if isinstance(raw, Mapping):
        return [dict(raw)], None
    text = str(raw).strip()
    try:
        values = _objects(text)
    except ValueError:
        try:
            values = [json.loads(_balanced(text))]
        except ValueError:
            return [{}], f"arguments are not JSON: {text[:80]!r}"
        problem: str | None = "arguments were truncated JSON and were closed"
    else:
        problem = None if len(values) == 1 else f"{len(values)} argument objects were concatenated"
    mappings = [value for value in values if isinstance(value, dict)]
    if not mappings:
        return [{}], f"arguments are not a JSON object: {text[:80]!r}"
    return mappings, problem


def _native(raw_calls: Any, make_id: Callable[[], str]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for raw in raw_calls if isinstance(raw_calls, list) else ():
        function = raw.get("function") if isinstance(raw, Mapping) else None
        if not isinstance(function, Mapping) or not function.get("name"):
            continue
        mappings, problem = parse_arguments(function.get("arguments"))
        for position, arguments in enumerate(mappings):
            call_id = raw.get("id") if position == 0 else None
            calls.append(
                ToolCall(
                    str(call_id) if call_id else make_id(),
                    str(function["name"]),
                    arguments,
                    problem,
                )
            )
    return calls


def _json_call(text: str, offered: Collection[str]) -> tuple[str, JSONObject] | None:
    fenced = _FENCE.match(text.strip())
    body = fenced.group(1) if fenced else text.strip()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in offered:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    mappings, _ = parse_arguments(arguments)
    return str(value["name"]), mappings[0]


def _parameter_value(text: str) -> Any:
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        return stripped


def _text_calls(content: str, offered: Collection[str]) -> tuple[str, list[tuple[str, JSONObject]]]:
    """Calls written in the text, for offered tools only; returns the text without them."""
    found: list[tuple[str, JSONObject]] = []

    def tool_call_tag(match: re.Match[str]) -> str:
        call = _json_call(match.group(1), offered)
        if call is None:
            return match.group(0)
        found.append(call)
        return ""

    def function_tag(match: re.Match[str]) -> str:
        if match.group(1) not in offered:
            return match.group(0)
        params = {k: _parameter_value(v) for k, v in _PARAMETER_TAG.findall(match.group(2))}
        found.append((match.group(1), params))
        return ""

    def bracket(match: re.Match[str]) -> str:
        if match.group(1) not in offered:
            return match.group(0)
        mappings, _ = parse_arguments(match.group(2))
        found.append((match.group(1), mappings[0]))
        return ""

    text = _TOOL_CALL_TAG.sub(tool_call_tag, content)
    text = _FUNCTION_TAG.sub(function_tag, text)
    text = _BRACKET_TOOL.sub(bracket, text)
    if not found and (whole := _json_call(text, offered)):
        return "", [whole]
    return text.strip(), found


def _unique(calls: Sequence[ToolCall], make_id: Callable[[], str]) -> list[ToolCall]:
    """Two calls of one reply never share an id (a result must answer one call); ids reused
    across replies are the thread's concern (``threads.with_fresh_call_ids``)."""
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for call in calls:
        kept = replace(call, id=make_id()) if call.id in seen else call
        seen.add(kept.id)
        unique.append(kept)
    return unique


def parse_reply(
    choice: Mapping[str, Any],
    offered: Collection[str],
    make_id: Callable[[], str] = new_call_id,
) -> ParsedReply:
    """Parse one ``choices[i]`` of a chat completion (``message`` and ``finish_reason``)."""
    message = choice.get("message") or {}
    raw_content = message.get("content") or ""
    if not isinstance(raw_content, str):
        raw_content = json.dumps(raw_content)
    thoughts = _THINK.findall(raw_content)
    content = _THINK.sub("", raw_content).strip()
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if thoughts and not reasoning:
        reasoning = "\n".join(
            re.sub(r"</?think>", "", t, flags=re.IGNORECASE).strip() for t in thoughts
        )
    calls = _native(message.get("tool_calls"), make_id)
    text_calls = False
    if not calls and offered:
        content, written = _text_calls(content, offered)
        calls = [ToolCall(make_id(), name, arguments) for name, arguments in written]
        text_calls = bool(calls)
    calls = _unique(calls, make_id)
    finish = choice.get("finish_reason")
    overflow = finish == "length" and not content and not calls
    return ParsedReply(content, tuple(calls), reasoning, finish, overflow, text_calls)

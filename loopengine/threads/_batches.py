"""Chat threads (seed 002): messages persisted per session, tool results of one round appended as
one atomic, idempotent batch, optimistic concurrency by version (ETag), strict session isolation.

The rules live here; the rows are the store's (``loopengine.store.threads``), which appends a
``new_batch`` in one transaction. Errors carry the HTTP status the API answers with: 412 stale
``If-Match``, 428 missing when required, 422 invalid messages or an idempotency key reused with
another body, 409 a message of another session.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from loopengine.errors import ThreadError
from loopengine.llm import new_call_id
from loopengine.store import Batch, BatchState
from loopengine.store.threads import ChatMessage, MessageToolCall

__all__ = [
    "call_ids",
    "mask_pii",
    "new_batch",
    "prune",
    "with_fresh_call_ids",
]

_LOG = logging.getLogger("loopengine.threads")
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_SECRET = re.compile(r"(?i)\b(?:(?:sk|pk|api|key|token)[-_]|bearer\s+)[A-Za-z0-9._\-]{12,}")
_PHONE = re.compile(r"\+?\d[\d .-]{7,}\d")


def mask_pii(text: str) -> str:
    """``text`` fit for logs: e-mail addresses, tokens and phone numbers masked."""
    text = _EMAIL.sub("<email>", text)
    text = _SECRET.sub("<secret>", text)
    return _PHONE.sub("<phone>", text)


def _hash(messages: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.sha256(
        json.dumps(list(messages), sort_keys=True, default=str).encode()
    ).hexdigest()


_NOT_JSON = object()


def _json_of(text: str) -> Any:
    """``text`` read as JSON, or ``_NOT_JSON``."""
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _refuse(index: int, code: str, said: str) -> ThreadError:
    return ThreadError(422, code, f"messages[{index}]{said}")


def _check_call(call: Any, index: int, position: int) -> str:
    """The tool a call asks for: it has an id, a function name, and arguments that are a JSON
    object (as text or an object), as OpenAI sends them."""
    where = f".tool_calls[{position}]"
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(call, Mapping) or not call.get("id"):
        raise _refuse(index, "invalid_tool_call", f"{where}: every tool call needs an id")
    if not isinstance(function, Mapping) or not function.get("name"):
        raise _refuse(index, "invalid_tool_call", f"{where}: a tool call names its function")
    arguments = function.get("arguments", "{}")
    if not isinstance(_json_of(arguments) if isinstance(arguments, str) else arguments, dict):
        shown = arguments[:80] if isinstance(arguments, str) else arguments
        raise _refuse(
            index,
            "invalid_tool_arguments",
            f"{where}: arguments must be a JSON object, as text or an object: {shown!r}",
        )
    return str(function["name"])


def _check_result(
    message: Mapping[str, Any], index: int, calls: Mapping[str, str], answers: dict[str, int]
) -> None:
    """A tool message answers, once, a call made before it, by the tool that call named, with
    JSON text."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _refuse(index, "missing_tool_call_id", ": a tool message needs a tool_call_id")
    if call_id not in calls:
        said = f": tool_call_id {call_id!r} answers no call of this thread"
        raise _refuse(index, "unknown_tool_call_id", said)
    if call_id in answers:
        said = f": tool_call_id {call_id!r} is already answered by messages[{answers[call_id]}]"
        raise _refuse(index, "duplicate_tool_result", said)
    answers[call_id] = index
    name = message.get("name")
    if name is not None and name != calls[call_id]:
        said = f": name {name!r} is not the tool call {call_id!r} asked for ({calls[call_id]!r})"
        raise _refuse(index, "tool_name_mismatch", said)
    if not isinstance(message.get("content"), str) or _json_of(message["content"]) is _NOT_JSON:
        raise _refuse(index, "invalid_tool_content", ": tool content must be a JSON string")


def _validate(messages: Sequence[Mapping[str, Any]], offered: Mapping[str, str]) -> None:
    """Every message well-formed; every tool message answers a call made before it, once, by
    the tool it named (``offered``: the thread's calls, by id, and the tool each names)."""
    calls = dict(offered)
    answers: dict[str, int] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in _ROLES:
            said = f": role {role!r} is not one of {sorted(_ROLES)}"
            raise _refuse(index, "invalid_role", said)
        for position, call in enumerate(message.get("tool_calls") or ()):
            name = _check_call(call, index, position)
            calls[str(call["id"])] = name
        if role == "tool":
            _check_result(message, index, calls, answers)


def call_ids(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ids of the tool calls ``messages`` make."""
    return {
        str(call["id"])
        for message in messages
        for call in message.get("tool_calls") or ()
        if isinstance(call, Mapping) and call.get("id")
    }


def with_fresh_call_ids(
    messages: Sequence[ChatMessage],
    taken: Collection[str],
    make_id: Callable[[], str] = new_call_id,
) -> list[ChatMessage]:
    """``messages`` with each call whose id ``taken`` holds renamed, and the results answering it:
    some servers number calls ``call_0``… in every reply, yet in a session a result answers one
    call (a later result for a known id is taken for a replay and dropped)."""
    if not call_ids(messages) & set(taken):
        return list(messages)
    renamed: dict[str, str] = {}

    def fresh_call(call: MessageToolCall) -> MessageToolCall:
        if call["id"] in taken:
            renamed[call["id"]] = make_id()
            return {**call, "id": renamed[call["id"]]}
        return call

    def fresh_message(message: ChatMessage) -> ChatMessage:
        if message.get("tool_calls"):
            return {**message, "tool_calls": [fresh_call(c) for c in message["tool_calls"]]}
        if message["role"] == "tool" and message.get("tool_call_id") in renamed:
            return {**message, "tool_call_id": renamed[message["tool_call_id"]]}
        return message

    return [fresh_message(message) for message in messages]


def _refuse_foreign(session_id: str, messages: Sequence[Mapping[str, Any]]) -> None:
    """A message that says it belongs to another session never enters this thread."""
    for message in messages:
        owner = message.get("session_id")
        if owner is not None and owner != session_id:
            _LOG.warning(
                "refused a message of session %s in session %s",
                mask_pii(str(owner)),
                mask_pii(session_id),
            )
            raise ThreadError(
                409, "foreign_message", "a message of another session cannot enter this thread"
            )


def _check_version(version: int, if_match: int | None, require_if_match: bool) -> None:
    if if_match is None:
        if require_if_match:
            raise ThreadError(
                428, "precondition_required", "If-Match is required: send the thread's ETag"
            )
    elif if_match != version:
        raise ThreadError(
            412, "precondition_failed", f"If-Match {if_match} is stale: the thread is at {version}"
        )


def new_batch(
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    operation_id: str,
    now: float,
    if_match: int | None = None,
    require_if_match: bool = False,
    relance_index: int | None = None,
) -> Batch:
    """``messages`` as one batch for ``store.threads.append_batch``, with the rules that admit
    it; a tool message without its own ``relance_index`` keeps the batch's."""
    body = _hash(messages)
    answers = frozenset(
        str(m["tool_call_id"])
        for m in messages
        if m.get("role") == "tool" and m.get("tool_call_id")
    )

    def admit(state: BatchState) -> bool:
        if state.applied is not None:
            if state.applied != body:
                raise ThreadError(
                    422,
                    "idempotency_conflict",
                    f"operation {operation_id!r} was already applied with another body",
                )
            return False
        _check_version(state.version, if_match, require_if_match)
        _refuse_foreign(session_id, messages)
        _validate(messages, state.calls)
        return True

    return Batch(
        session_id,
        operation_id,
        body,
        [_with_relance(message, relance_index) for message in messages],
        answers,
        bool(answers - call_ids(messages)),
        admit,
        now,
    )


def _with_relance(message: Mapping[str, Any], relance_index: int | None) -> Mapping[str, Any]:
    if message.get("role") == "tool" and message.get("relance_index") is None:
        return {**message, "relance_index": relance_index}
    return message


def prune(messages: Sequence[ChatMessage], keep: int) -> list[ChatMessage]:
    """The last ``keep`` messages or a few more: never a tool message without its assistant call.

    Leading system messages are always kept.
    """
    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    start = max(0, len(rest) - keep)
    while start > 0 and rest[start].get("role") == "tool":
        start -= 1
    return [*system, *rest[start:]]

"""Streamed chat completions (server-sent events) assembled into the one choice a plain call
returns, so parsing and the agent loop never know the difference. Pure: fed line by line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from loopengine.errors import LLMError

if TYPE_CHECKING:
    from loopengine.store.threads import MessageToolCall

__all__ = ["DONE", "USAGE_KEYS", "Assembly", "CompletionChoice", "event_data", "token_usage"]

DONE = "[DONE]"


def event_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line; None for comments, other fields and blank lines."""
    if not line.startswith("data:"):
        return None
    return line[5:].removeprefix(" ")


USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
_MOST_TOKENS = 10**9
"""More tokens than any one call reports: a count past it is a model's nonsense, not usage."""


def token_usage(raw: Any) -> dict[str, int]:
    """The token counts of a node's ``usage``: whole numbers in range, the rest dropped (a
    model's reply is untrusted; a count given as text or a list must not break the budget)."""
    if not isinstance(raw, dict):
        return {}
    return {
        key: value
        for key in USAGE_KEYS
        if type(value := raw.get(key)) is int and 0 <= value <= _MOST_TOKENS
    }


class ReplyMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    reasoning_content: NotRequired[str]
    tool_calls: NotRequired[list[MessageToolCall]]


class CompletionChoice(TypedDict):
    """A completion's ``choices[0]`` (OpenAI shape)."""

    index: int
    message: ReplyMessage
    finish_reason: str | None


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(slots=True)
class Assembly:
    """The chunks of one streamed answer, merged as they arrive."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None

    def feed(self, data: str) -> str:
        """Merge one event's payload; returns the text it added to the answer ('' if none)."""
        try:
            chunk = json.loads(data)
        except ValueError:
            raise LLMError(f"an event is not JSON: {data[:120]!r}") from None
        if not isinstance(chunk, dict):
            raise LLMError(f"an event is not a JSON object: {data[:120]!r}")
        if chunk.get("error"):
            error = chunk["error"]
            raise LLMError(str(error.get("message") if isinstance(error, dict) else error))
        self.model = self.model or chunk.get("model")
        if chunk.get("usage"):
            self.usage = token_usage(chunk["usage"])
        text = ""
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            text += self._delta(choice.get("delta") or {})
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        return text

    def _delta(self, delta: dict[str, Any]) -> str:
        text = delta.get("content") or ""
        if text:
            self.content.append(text)
        if thought := delta.get("reasoning_content") or delta.get("reasoning"):
            self.reasoning.append(str(thought))
        for position, piece in enumerate(delta.get("tool_calls") or ()):
            self._call_piece(position, piece)
        return str(text)

    def _call_piece(self, position: int, piece: Any) -> None:
        if not isinstance(piece, dict):
            return
        call = self.calls.setdefault(int(piece.get("index", position)), _Call())
        call.id = call.id or str(piece.get("id") or "")
        function = piece.get("function") or {}
        name = function.get("name") or ""
        if name and name != call.name:
            call.name += name
        call.arguments += function.get("arguments") or ""

    def choice(self) -> CompletionChoice:
        """The assembled ``choices[0]`` in the shape of a plain (non-streamed) completion."""
        message: ReplyMessage = {"role": "assistant", "content": "".join(self.content) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for _, call in sorted(self.calls.items())
            ]
        return {"index": 0, "message": message, "finish_reason": self.finish_reason}

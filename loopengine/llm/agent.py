"""The standard agentic loop (seed 001): call → run the tool calls → feed back successes *and*
errors → repeat, until the model answers without tools or the stage's turns run out."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from loopengine.contract.config import Node
from loopengine.engine.concurrency import run_all
from loopengine.llm.client import Completion
from loopengine.llm.guard import LoopGuard, call_key
from loopengine.llm.toolcalls import ToolCall, parse_reply
from loopengine.llm.tools import Toolbox, ToolOutcome

__all__ = ["ANSWER_NOW", "ChatNode", "StageReport", "run_agent"]

ANSWER_NOW = (
    "You have used all the turns available for tools. Answer now, as well as you can, with what "
    "you have gathered; do not call any tool."
)


@dataclass(slots=True)
class StageReport:
    """One agent run: ``status`` is ok, loop_stopped, budget (partial), failed or skipped."""

    node: str
    model: str
    status: str = "ok"
    turns: int = 0
    reply: str = ""
    reason: str | None = None
    tools_used: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    duration_ms: float = 0.0
    tokens: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return self.status in ("budget", "loop_stopped")

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "node": self.node,
            "model": self.model,
            "turns": self.turns,
            "status": self.status,
            "tools_used": self.tools_used,
            "duration_ms": round(self.duration_ms, 1),
        }
        if self.reason:
            entry["reason"] = self.reason
        return entry


Usage = Callable[[Completion], None]


class ChatNode(Protocol):
    """What an agent talks to: a named node that completes chats."""

    name: str
    node: Node

    async def chat(self, messages: Sequence[dict[str, Any]], tools: Any = None) -> Completion: ...


async def _run_calls(toolbox: Toolbox, calls: Sequence[ToolCall]) -> list[ToolOutcome]:
    outcomes: list[ToolOutcome | None] = [None] * len(calls)

    async def one(index: int, call: ToolCall) -> None:
        if call.problem and not call.arguments:
            outcomes[index] = ToolOutcome(call.name, {}, False, error=call.problem)
        else:
            outcomes[index] = await toolbox.run(call.name, call.arguments)

    await run_all([partial(one, index, call) for index, call in enumerate(calls)])
    return [outcome for outcome in outcomes if outcome is not None]


def _repeat(guard: LoopGuard, calls: Sequence[ToolCall]) -> str | None:
    keys: set[str] = set()
    for call in calls:
        if stop := guard.check(call.name, call.arguments):
            return stop.detail
        key = call_key(call.name, call.arguments)
        if key in keys:
            return f"{call.name} was called twice in one turn with the same arguments"
        keys.add(key)
    return None


async def run_agent(
    client: ChatNode,
    messages: Sequence[dict[str, Any]],
    toolbox: Toolbox,
    *,
    tools: Sequence[str] | None = None,
    max_turns: int = 4,
    answer_now: bool = True,
    usage: Usage | None = None,
) -> StageReport:
    """Run one stage; never raises for tool problems, only ``LLMError`` when the node fails."""
    started = time.perf_counter()
    report = StageReport(client.name, client.node.model)
    specs = toolbox.specs(tools) if tools is None or tools else []
    offered = [spec["function"]["name"] for spec in specs]
    history = list(messages)
    guard = LoopGuard()

    async def ask(with_tools: bool) -> Any:
        completion = await client.chat(history, specs if with_tools else None)
        report.tokens += completion.tokens
        report.latencies_ms.append(completion.latency_ms)
        if usage is not None:
            usage(completion)
        return parse_reply(completion.choice, offered if with_tools else ())

    def add(message: dict[str, Any]) -> None:
        history.append(message)
        report.messages.append(message)

    try:
        while report.turns < max_turns:
            report.turns += 1
            parsed = await ask(with_tools=bool(specs))
            if parsed.overflow:
                report.status = "failed"
                report.reason = (
                    "context overflow: the model reached its token limit before answering"
                )
                return report
            if not parsed.tool_calls:
                report.reply = parsed.content
                add({"role": "assistant", "content": parsed.content})
                return report
            add(
                {
                    "role": "assistant",
                    "content": parsed.content or None,
                    "tool_calls": [call.as_message() for call in parsed.tool_calls],
                }
            )
            if repeated := _repeat(guard, parsed.tool_calls):
                report.status, report.reason = "loop_stopped", repeated
                for call in parsed.tool_calls:
                    add(
                        {
                            "role": "tool",
                            "tool_call_id": call.id,
                            "content": '{"error": "not run: the stage stopped a repeated call"}',
                        }
                    )
                return report
            for call, outcome in zip(
                parsed.tool_calls, await _run_calls(toolbox, parsed.tool_calls), strict=True
            ):
                add({"role": "tool", "tool_call_id": call.id, "content": outcome.content()})
                report.tools_used.append(outcome.as_dict())
                guard, stop = guard.record(
                    call.name,
                    call.arguments,
                    ok=outcome.ok,
                    result=outcome.result if outcome.ok else outcome.error,
                )
                if stop is not None:
                    report.status, report.reason = "loop_stopped", stop.detail
            if report.status == "loop_stopped":
                return report
        report.status = "budget"
        report.reason = f"used its {max_turns} turns"
        if answer_now:
            history.append({"role": "user", "content": ANSWER_NOW})
            parsed = await ask(with_tools=False)
            report.reply = parsed.content
            add({"role": "assistant", "content": parsed.content})
        return report
    finally:
        report.duration_ms = (time.perf_counter() - started) * 1000

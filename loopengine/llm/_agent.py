"""The standard agentic loop (seed 001): call → run the tool calls → feed back successes *and*
errors → repeat, until the model answers without tools or the stage's turns run out."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from loopengine._concurrency import run_all
from loopengine._json import JSONObject
from loopengine.contract import Node
from loopengine.llm._client import Completion
from loopengine.llm._guard import LoopGuard, call_key
from loopengine.llm._toolbox import Toolbox, ToolOutcome, ToolSpec
from loopengine.llm._toolcalls import ToolCall, parse_reply
from loopengine.skills import Progress

if TYPE_CHECKING:
    from loopengine.store.threads import ChatMessage

__all__ = [
    "ANSWER_AFTER_STOP",
    "ANSWER_NOW",
    "NO_HOOKS",
    "ChatNode",
    "Hooks",
    "RoundCommit",
    "RoundHook",
    "Spend",
    "StageReport",
    "run_agent",
]

ANSWER_NOW = (
    "You have used all the turns available for tools. Answer now, as well as you can, with what "
    "you have gathered; do not call any tool."
)
ANSWER_AFTER_STOP = (
    "You repeated a tool call, so tools are closed. Answer now, as well as you can, with what "
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
    tools_used: list[JSONObject] = field(default_factory=list)
    messages: list[ChatMessage] = field(default_factory=list)
    duration_ms: float = 0.0
    tokens: int = 0
    output_tokens: int = 0
    """The completion tokens of its answers (speed is judged per output token)."""
    latencies_ms: list[float] = field(default_factory=list)
    called: bool = True
    """Whether the node was asked (a stage skipped for a cooling node or a spent budget was
    not; one skipped for a failed call was, and counts against the node's reliability)."""

    @property
    def partial(self) -> bool:
        return self.status in ("budget", "loop_stopped")

    def as_dict(self) -> JSONObject:
        entry: JSONObject = {
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


Spend = Callable[[int, int], str | None]
"""Counts ``(tokens, calls)`` into a budget and says why it is spent, if it is."""


@dataclass(frozen=True, slots=True)
class RoundCommit:
    """A round handed to the store: the thread it makes, used at once for the next call, and the
    commit, which settles with None when the store holds exactly that thread, else with the
    store's thread (the next call's answer is then discarded and the call made again)."""

    thread: list[ChatMessage]
    committed: Awaitable[list[ChatMessage] | None]


RoundHook: TypeAlias = "Callable[[list[ChatMessage]], RoundCommit]"
"""Told each round's messages (assistant tool calls + results) as the round ends."""


@dataclass(frozen=True, slots=True)
class Hooks:
    """What the caller of a stage or chain is told as it runs; each is optional."""

    spend: Spend | None = None
    on_round: RoundHook | None = None
    progress: Progress | None = None

    def tell(self, event: str, **fields: Any) -> None:
        if self.progress is not None:
            self.progress(event, fields)


NO_HOOKS = Hooks()


class ChatNode(Protocol):
    """What an agent talks to: a named node that completes chats."""

    name: str
    node: Node

    async def chat(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] | None = None
    ) -> Completion: ...


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


class _Run:
    """The state of one stage while it runs."""

    def __init__(
        self,
        client: ChatNode,
        messages: Sequence[ChatMessage],
        toolbox: Toolbox,
        tools: Sequence[str] | None,
        hooks: Hooks,
    ) -> None:
        self.client, self.toolbox, self.hooks = client, toolbox, hooks
        self.report = StageReport(client.name, client.node.model)
        self.specs = toolbox.specs(tools) if tools is None or tools else []
        self.offered = [spec["function"]["name"] for spec in self.specs]
        self.history = list(messages)
        self.prefix = [m for m in self.history if m.get("role") == "system"]
        self.guard = LoopGuard()
        self.pending: Awaitable[list[ChatMessage] | None] | None = None

    async def settle(self) -> bool:
        """Wait for the last round's commit; True when the thread held was not the store's."""
        if self.pending is None:
            return False
        pending, self.pending = self.pending, None
        rebuilt = await pending
        if rebuilt is None:
            return False
        self.history = [*self.prefix, *rebuilt]
        return True

    async def ask(self, with_tools: bool) -> Any:
        """One call, made while the last round commits; nothing is acted on before it has."""
        while True:
            try:
                completion = await self.client.chat(
                    self.history, self.specs if with_tools else None
                )
            except BaseException:
                await self.settle()
                raise
            stale = await self.settle()
            self.report.tokens += completion.tokens
            self.report.output_tokens += completion.usage.get("completion_tokens", 0)
            self.report.latencies_ms.append(completion.latency_ms)
            if self.hooks.spend is not None:
                self.hooks.spend(completion.tokens, 1)
            if not stale:
                return parse_reply(completion.choice, self.offered if with_tools else ())

    def out_of_budget(self) -> bool:
        reason = self.hooks.spend(0, 0) if self.hooks.spend is not None else None
        if reason:
            self.report.status, self.report.reason = "budget", reason
        return reason is not None

    def add(self, message: ChatMessage) -> None:
        self.history.append(message)
        self.report.messages.append(message)

    def stop(self, reason: str, calls: Sequence[ToolCall]) -> None:
        self.report.status, self.report.reason = "loop_stopped", reason
        for call in calls:
            self.add(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": '{"error": "not run: the stage stopped a repeated call"}',
                }
            )

    async def tools_round(self, calls: Sequence[ToolCall], content: str) -> None:
        """Run one round of calls and feed every result back; may stop the stage."""
        round_start = len(self.report.messages)
        self.add(
            {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [call.as_message() for call in calls],
            }
        )
        if repeated := _repeat(self.guard, calls):
            self.stop(repeated, calls)
            return
        for call, outcome in zip(calls, await _run_calls(self.toolbox, calls), strict=True):
            self.add({"role": "tool", "tool_call_id": call.id, "content": outcome.content()})
            used = outcome.as_dict()
            self.report.tools_used.append(used)
            self.hooks.tell("llm.tool", node=self.report.node, **used)
            result = outcome.result if outcome.ok else outcome.error
            self.guard, stop = self.guard.record(
                call.name, call.arguments, ok=outcome.ok, result=result
            )
            if stop is not None:
                self.report.status, self.report.reason = "loop_stopped", stop.detail
        if self.hooks.on_round is not None:
            commit = self.hooks.on_round(self.report.messages[round_start:])
            self.history = [*self.prefix, *commit.thread]
            self.pending = commit.committed

    async def answer_now(self, prompt: str = ANSWER_NOW) -> None:
        await self.settle()
        self.history.append({"role": "user", "content": prompt})
        parsed = await self.ask(with_tools=False)
        self.report.reply = parsed.content
        self.add({"role": "assistant", "content": parsed.content})


async def run_agent(
    client: ChatNode,
    messages: Sequence[ChatMessage],
    toolbox: Toolbox,
    *,
    tools: Sequence[str] | None = None,
    max_turns: int = 4,
    answer_now: bool = True,
    answer_after_stop: bool = False,
    hooks: Hooks = NO_HOOKS,
) -> StageReport:
    """Run one stage; never raises for tool problems, only ``LLMError`` when the node fails."""
    started = time.perf_counter()
    run = _Run(client, messages, toolbox, tools, hooks)
    report = run.report
    try:
        while report.turns < max_turns and report.status == "ok":
            if run.out_of_budget():
                return report
            report.turns += 1
            parsed = await run.ask(with_tools=bool(run.specs))
            if parsed.overflow:
                report.status = "failed"
                report.reason = (
                    "context overflow: the model reached its token limit before answering"
                )
            elif not parsed.tool_calls:
                report.reply = parsed.content
                run.add({"role": "assistant", "content": parsed.content})
                return report
            else:
                await run.tools_round(parsed.tool_calls, parsed.content)
        if report.status == "ok":
            report.status, report.reason = "budget", f"used its {max_turns} turns"
            if answer_now and not run.out_of_budget():
                await run.answer_now()
        elif report.status == "loop_stopped" and answer_after_stop and not run.out_of_budget():
            await run.answer_now(ANSWER_AFTER_STOP)
        return report
    finally:
        await run.settle()
        report.duration_ms = (time.perf_counter() - started) * 1000

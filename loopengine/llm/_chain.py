"""The reflexive chain (seed 000 §1): research with tools → analysis → review, each stage seeing
what the ones before it found; a node that is down or fails is skipped and the chain goes on."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from loopengine._json import JSONObject
from loopengine.errors import LLMError
from loopengine.llm._agent import NO_HOOKS, Hooks, StageReport, run_agent
from loopengine.llm._cluster import Cluster, Explore
from loopengine.llm._toolbox import Toolbox

if TYPE_CHECKING:
    from loopengine.store.threads import ChatMessage

__all__ = [
    "DEFAULT_STAGES",
    "ChainResult",
    "StageSpec",
    "answer_messages",
    "chain_stages",
    "run_chain",
    "run_simple",
]

MAX_TURNS = 8
_ROLES = {
    "research": "You are the research stage. Use the tools to gather the facts needed to answer; "
    "report what you found, with sources.",
    "analysis": "You are the analysis stage. Reason over the facts gathered so far and write a "
    "complete answer; use tools only if a fact is missing.",
    "review": "You are the review stage. Check the draft answer against the facts, correct and "
    "complete it, and give the final answer to the user.",
    "answer": "Answer the user's message. Use the tools when you need facts.",
}
_RESULT_CHARS = 2000


@dataclass(frozen=True, slots=True)
class StageSpec:
    """One stage: its node, role and turns; ``answer_after_stop`` asks a stage stopped for a
    repeated call for a tool-free answer (a single node has no later stage to answer)."""

    node: str
    role: str
    max_turns: int
    tools: bool = True
    answer_after_stop: bool = False


_TURNS = {"research": 4, "analysis": 3, "review": 2, "answer": 4}


def chain_stages(nodes: Sequence[str]) -> tuple[StageSpec, ...]:
    """The stages of a chain over ``nodes`` (``cluster.chain``): the first researches with
    tools, the last reviews, those between analyse; a single node answers alone."""
    if len(nodes) == 1:
        return (StageSpec(nodes[0], "answer", _TURNS["answer"], answer_after_stop=True),)
    roles = ["research", *["analysis"] * (len(nodes) - 2), "review"]
    return tuple(
        StageSpec(node, role, _TURNS[role]) for node, role in zip(nodes, roles, strict=True)
    )


DEFAULT_STAGES = chain_stages(("OL1", "M1", "M2"))


@dataclass(slots=True)
class ChainResult:
    """The reply and every stage's report (skipped ones included, with their reason)."""

    reply: str
    mode: str
    stages: list[StageReport] = field(default_factory=list)
    duration_ms: float = 0.0

    @property
    def turns(self) -> int:
        return sum(stage.turns for stage in self.stages)

    @property
    def tools_used(self) -> list[JSONObject]:
        return [used for stage in self.stages for used in stage.tools_used]

    def as_dict(self) -> JSONObject:
        return {
            "reply": self.reply,
            "mode": self.mode,
            "turns": self.turns,
            "chain": [stage.as_dict() for stage in self.stages],
            "tools_used": self.tools_used,
        }


def _briefing(stages: Sequence[StageReport]) -> str | None:
    """What earlier stages found: tool results and drafts, for the next stage to build on."""
    parts: list[str] = []
    for stage in stages:
        for used in stage.tools_used:
            shown = used.get("result") if used["ok"] else {"error": used.get("error")}
            text = json.dumps(shown, ensure_ascii=False, default=str)[:_RESULT_CHARS]
            parts.append(f"[{stage.node}] {used['name']}({json.dumps(used['args'])}) → {text}")
        if stage.reply:
            parts.append(f"[{stage.node} {stage.status}] {stage.reply}")
    return "Findings of the previous stages:\n" + "\n".join(parts) if parts else None


def _messages(
    role: str, history: Sequence[ChatMessage], briefing: str | None, instructions: str | None
) -> list[ChatMessage]:
    system = _ROLES.get(role, role)
    if instructions:
        system = f"{system}\n\n{instructions}"
    messages: list[ChatMessage] = [{"role": "system", "content": system}]
    messages.extend(history)
    if briefing:
        messages.append({"role": "system", "content": briefing})
    return messages


def answer_messages(message: str, instructions: str | None) -> list[ChatMessage]:
    """What a single node answering ``message`` alone is sent (how autoreview replays it)."""
    return _messages("answer", [{"role": "user", "content": message}], None, instructions)


def _skipped(spec: StageSpec, cluster: Cluster, reason: str) -> StageReport:
    nodes = cluster.config.nodes
    model = nodes[spec.node].model if spec.node in nodes else ""
    return StageReport(spec.node, model, status="skipped", reason=reason, called=False)


async def _stage(
    spec: StageSpec,
    cluster: Cluster,
    history: Sequence[ChatMessage],
    done: Sequence[StageReport],
    toolbox: Toolbox,
    turns: int,
    hooks: Hooks,
    instructions: str | None,
) -> StageReport:
    if reason := cluster.available(spec.node):
        report = _skipped(spec, cluster, reason)
    else:
        hooks.tell("llm.stage", node=spec.node, role=spec.role)
        started = time.perf_counter()
        try:
            report = await run_agent(
                cluster.bind(spec.node),
                _messages(spec.role, history, _briefing(done), instructions),
                toolbox,
                tools=None if spec.tools else [],
                max_turns=turns,
                answer_after_stop=spec.answer_after_stop,
                hooks=hooks,
            )
        except LLMError as exc:
            report = _skipped(spec, cluster, str(exc))
            report.called = True
            report.duration_ms = (time.perf_counter() - started) * 1000
    hooks.tell("llm.stage_done", **report.as_dict())
    return report


async def run_chain(
    cluster: Cluster,
    history: Sequence[ChatMessage],
    toolbox: Toolbox,
    *,
    stages: Sequence[StageSpec] = DEFAULT_STAGES,
    max_turns: int = MAX_TURNS,
    hooks: Hooks = NO_HOOKS,
    instructions: str | None = None,
) -> ChainResult:
    """Run the stages in order within ``max_turns`` in all, each told ``instructions`` after
    its role; the last useful reply wins."""
    started = time.perf_counter()
    result = ChainResult("", "reflexive")
    left = max_turns
    for spec in stages:
        budget = hooks.spend(0, 0) if hooks.spend is not None else None
        if left <= 0 or budget:
            skipped = _skipped(spec, cluster, budget or f"the chain's {max_turns} turns are used")
            hooks.tell("llm.stage_done", **skipped.as_dict())
            result.stages.append(skipped)
            continue
        turns = min(spec.max_turns, left)
        report = await _stage(
            spec, cluster, history, result.stages, toolbox, turns, hooks, instructions
        )
        left -= report.turns
        result.stages.append(report)
    result.reply = next((s.reply for s in reversed(result.stages) if s.reply.strip()), "")
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


async def run_simple(
    cluster: Cluster,
    history: Sequence[ChatMessage],
    toolbox: Toolbox,
    category: str,
    *,
    max_turns: int = 4,
    hooks: Hooks = NO_HOOKS,
    instructions: str | None = None,
    tuned: Mapping[str, list[str]] | None = None,
    explore: Explore | None = None,
) -> ChainResult:
    """One node (the first available for ``category``, ``tuned`` orders first, unless the
    message ``explore``s another) runs the same agent loop, with tools."""
    started = time.perf_counter()
    name = cluster.pick(category, tuned, explore)
    if name is None:
        raise LLMError(f"no node of the cluster is available for category {category!r}")
    spec = StageSpec(name, "answer", max_turns, answer_after_stop=True)
    report = await _stage(spec, cluster, history, (), toolbox, max_turns, hooks, instructions)
    result = ChainResult(report.reply, "simple", [report])
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result

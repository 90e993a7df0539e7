"""Built-in LLM skills: ``llm.classify``, ``llm.agent`` (one node), ``llm.reflexive`` (chain);
and what every skill calling a model shares: the engine's LLM runtime, and its calls counted
into the loop's budget.

``loopengine.llm`` (httpx, the store) is imported when a skill runs, not when it is registered.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from loopengine._json import JSONObject
from loopengine.errors import BudgetExceeded, SkillError
from loopengine.skills import SkillContext, SkillOutput, skill

if TYPE_CHECKING:
    from loopengine.builtins._runtime import ChatContext, LLMRuntime
    from loopengine.llm import ChainResult, Hooks, RoundCommit
    from loopengine.store.threads import ChatMessage

__all__ = ["Usage", "classify", "llm_agent", "llm_reflexive", "llm_runtime"]


def llm_runtime(ctx: SkillContext) -> LLMRuntime:
    """The engine's LLM runtime; ``SkillError`` when the config has no cluster."""
    from loopengine.builtins._runtime import LLMRuntime

    runtime = ctx.llm
    if not isinstance(runtime, LLMRuntime):
        raise SkillError(
            "LLM skills need an engine with an LLM cluster (cluster: in loopengine.yaml)"
        )
    return runtime


class Usage:
    """A skill's model calls and tokens, each counted into the loop's budget (``ctx.spend``) as
    it is made; ``spent`` says why the budget is spent, once it is."""

    def __init__(self, ctx: SkillContext, skill: str) -> None:
        self.ctx, self.skill = ctx, skill
        self.tokens = self.calls = 0
        self.spent: str | None = None

    def spend(self, tokens: int, calls: int) -> str | None:
        """Count ``tokens`` and ``calls``; why the budget is spent, else None (a ``Spend``)."""
        self.tokens, self.calls = self.tokens + tokens, self.calls + calls
        if self.ctx.spend is not None:
            self.spent = self.ctx.spend(tokens, calls) or self.spent
        return self.spent

    def check(self, stopped: str) -> None:
        """``BudgetExceeded`` once the budget is spent, saying what it ``stopped``."""
        if self.spent:
            raise BudgetExceeded(f"{self.skill}: {self.spent} {stopped}")

    def start(self) -> None:
        """A call starts: refused once the budget is spent, else counted, so calls side by side
        never pass it (its tokens are counted when it ends)."""
        self.check(f"after {self.calls} model calls")
        self.spend(0, 1)

    def ended(self, tokens: int) -> None:
        self.spend(tokens, 0)

    @property
    def metrics(self) -> dict[str, float]:
        return {"llm.tokens": float(self.tokens), "llm.calls": float(self.calls)}


@skill("llm.classify", description="Classify a chat message as simple or reflexive (seed rules).")
async def classify(ctx: SkillContext, message: str, category: str | None = None) -> JSONObject:
    from loopengine.llm import classify_complexity

    result = classify_complexity(message, category)
    return {"classification": {"mode": result.mode, "reasons": list(result.reasons)}}


def _samples(
    ctx: SkillContext,
    result: ChainResult,
    message: str,
    session: str,
    category: str,
    prompt_version: int,
) -> list[dict[str, Any]]:
    """The responses to score (``autolearn``): in simple mode the node's, answered or failed; in
    the chain, the stage whose reply the user got (the others answer a stage's question, not
    the user's, and are not judged). Each with its node, time (the model's, tools' time aside),
    output tokens (the node's word, so no more than its reply has characters), whether it
    answered, and the texts a grader reads."""
    now = ctx.clock()
    answering = next((s for s in reversed(result.stages) if s.reply.strip()), None)
    scored = result.stages if result.mode == "simple" else [answering] if answering else []
    return [
        {
            "execution_id": ctx.execution_id,
            "session_id": session,
            "node": stage.node,
            "category": category,
            "mode": result.mode,
            "seconds": sum(stage.latencies_ms) / 1000 or stage.duration_ms / 1000,
            "output_tokens": min(stage.output_tokens, len(stage.reply)),
            "success": bool(stage.reply.strip()),
            "message": message,
            "reply": stage.reply,
            "created_at": now,
            "prompt_version": prompt_version,
        }
        for stage in scored
        if stage.called
    ]


def _category(ctx: SkillContext, given: str | None, mode: str) -> str:
    """The message's routing category (``llm.message_category``): the one given, else its mode
    when the config routes it, else ``default``."""
    from loopengine.llm import message_category

    return message_category(ctx.config.cluster.routing, given, mode)


async def _converse(
    ctx: SkillContext,
    usage: Usage,
    message: str,
    session: str | None,
    run: Any,
    category: str,
    user: str | None,
) -> SkillOutput:
    """The user's message is stored once per step, even when a resumed execution runs the step
    again; that run's rounds and reply are its own (the model may answer otherwise). Each
    stage's response is kept for scoring under ``category``, and the exchange in the memory of
    ``user`` (a message without one has no memory: it reads none and adds to none); a dry run
    feeds neither. What the message starts from is one read; the message (unless a round of
    tool calls, which follows it in the thread, wrote it first), the reply, the nodes' health
    and those are written with the step's commit: a step that fails before any round leaves
    its thread as it was (its execution records the message and why)."""
    from loopengine.llm import Hooks
    from loopengine.store import autolearn

    runtime = llm_runtime(ctx)
    session_id = session or uuid.uuid4().hex
    asking = f"{ctx.idempotency_key}:user"
    context, conversation, asked = await runtime.prepare(category, user, session_id, asking)
    question: list[ChatMessage] = [{"role": "user", "content": message}]
    unsent = None if asked else conversation.batch(question, asking)
    sent: RoundCommit | None = None
    rounds = 0
    attempt = f"{ctx.idempotency_key}:{uuid.uuid4().hex[:12]}"

    def on_round(messages: list[ChatMessage]) -> RoundCommit:
        nonlocal rounds, sent, unsent
        rounds += 1
        if unsent is not None:
            sent, unsent = conversation.send(unsent), None
        return conversation.commit(messages, f"{attempt}:round:{rounds}")

    started = time.perf_counter()
    hooks = Hooks(usage.spend, on_round, ctx.progress)
    try:
        result: ChainResult = await run(runtime, conversation.thread, hooks, context)
    finally:
        if sent is not None:
            await sent.committed
    answer: list[ChatMessage] = (
        [{"role": "assistant", "content": result.reply}] if result.reply else []
    )
    if unsent is not None:
        batches = [conversation.amend(unsent, answer)]
    else:
        batches = [conversation.batch(answer, f"{attempt}:reply")] if answer else []
    samples = _samples(ctx, result, message, session_id, category, context.prompt_version)
    exchange = {
        "session_id": session_id,
        "category": category,
        "message": message,
        "reply": result.reply,
    }
    keep = ctx.config.autolearn.memory_keep
    remembered = (user, exchange, keep) if user and result.reply else None
    if ctx.dry_run:
        samples, remembered = [], None
    recorded = autolearn.RecordReply(
        tuple(batches), runtime.health_changes(), samples, remembered, ctx.clock()
    )
    answered = [s for s in result.stages if s.status != "skipped"]
    chat = {
        **result.as_dict(),
        "session_id": session_id,
        "category": category,
        "node": answered[-1].node if answered else None,
        "latency_ms": round((time.perf_counter() - started) * 1000, 1),
        "skipped": [s.node for s in result.stages if s.status == "skipped"],
    }
    return SkillOutput(data={"chat": chat}, metrics=usage.metrics, effects=(recorded,))


@skill("llm.agent", description="One node answers with the agent loop and tools.")
async def llm_agent(
    ctx: SkillContext,
    message: str,
    session: str | None = None,
    category: str | None = None,
    max_turns: int = 4,
    user: str | None = None,
) -> SkillOutput:
    from loopengine.llm import run_simple

    routed = _category(ctx, category, "simple")

    async def run(
        runtime: LLMRuntime, history: list[ChatMessage], hooks: Hooks, context: ChatContext
    ) -> ChainResult:
        return await run_simple(
            runtime.cluster,
            history,
            runtime.toolbox,
            routed,
            max_turns=max_turns,
            hooks=hooks,
            instructions=context.instructions,
            tuned=context.tuned,
            explore=context.explore,
        )

    return await _converse(ctx, Usage(ctx, "llm.agent"), message, session, run, routed, user)


@skill("llm.reflexive", description="The reflexive chain: research with tools, analysis, review.")
async def llm_reflexive(
    ctx: SkillContext,
    message: str,
    session: str | None = None,
    stages: list[dict[str, Any]] | None = None,
    max_turns: int = 8,
    category: str | None = None,
    user: str | None = None,
) -> SkillOutput:
    from loopengine.llm import StageSpec, chain_stages, run_chain

    if stages:
        chosen = tuple(StageSpec(**stage) for stage in stages)
    else:
        chosen = chain_stages(ctx.config.cluster.chain)

    async def run(
        runtime: LLMRuntime, history: list[ChatMessage], hooks: Hooks, context: ChatContext
    ) -> ChainResult:
        return await run_chain(
            runtime.cluster,
            history,
            runtime.toolbox,
            stages=chosen,
            max_turns=max_turns,
            hooks=hooks,
            instructions=context.instructions,
        )

    routed = _category(ctx, category, "reflexive")
    usage = Usage(ctx, "llm.reflexive")
    return await _converse(ctx, usage, message, session, run, routed, user)

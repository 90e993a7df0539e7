"""Built-in autolearn skills (seed 003) that ``loops/autotune.yaml`` is made of: grade the chat's
responses (``autolearn.grade``), score them and propose routing orders (``autolearn.scores``),
hear the analysis node on the trends (``autolearn.analyze_trends``), write the orders
(``autolearn.route``) and keep the scores (``autolearn.record_scores``). Everything lives in the
store; no file is ever changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopengine._json import JSONObject
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, skill

if TYPE_CHECKING:
    from collections.abc import Sequence

    from loopengine.store import Store
    from loopengine.store.autolearn import ChatSample
    from loopengine.store.threads import ChatMessage

__all__ = [
    "GRADE_TIMEOUT_S",
    "GRADING_PROMPT",
    "KEPT_WINDOWS",
    "NO_CLUSTER",
    "ask",
    "autolearn_analyze_trends",
    "autolearn_grade",
    "autolearn_record_scores",
    "autolearn_route",
    "autolearn_scores",
    "current_orders",
    "grade_reply",
    "grader_of",
    "store_of",
]

KEPT_WINDOWS = 2
"""Windows of samples kept per node and category; older ones are dropped at each tuning cycle."""
NO_CLUSTER = (
    "no cluster is configured: add the chat's nodes under `cluster: nodes:` in loopengine.yaml"
)
"""What an autolearn cycle says when there is nothing to learn from for want of LLM nodes."""
GRADE_TIMEOUT_S = 10.0
"""Longest the grader may take on one response; past it the response stays ungraded."""
GRADING_PROMPT = (
    "Grade the answer to the question from 1 (useless or wrong) to 10 (correct, complete and "
    "clear). Reply with the number only.\n\nQuestion:\n{message}\n\nAnswer:\n{reply}"
)


def store_of(ctx: SkillContext) -> Store:
    """The engine's store (the autolearn skills keep everything there)."""
    if ctx.store is None:
        raise SkillError("autolearn skills need the engine's store")
    return ctx.store


async def current_orders(ctx: SkillContext) -> dict[str, list[str]]:
    """Each category's routing order: the tuned one over the config's."""
    from loopengine.autolearn._learned import followed_routing
    from loopengine.store import autolearn

    followed = followed_routing(ctx.config, await store_of(ctx).read(autolearn.routing))
    return {category: found.nodes for category, found in followed.items()}


async def ask(
    runtime: Any, node: str, messages: Sequence[ChatMessage], timeout_s: float
) -> str | None:
    """``node``'s answer (its reasoning left out); None when it is cooling down, fails or takes
    over ``timeout_s`` (then it cools down, so the next call does not wait as long again)."""
    import anyio

    from loopengine.errors import LLMError
    from loopengine.llm import parse_reply

    if runtime.cluster.available(node) is not None:
        return None
    with anyio.move_on_after(timeout_s):
        try:
            completion = await runtime.cluster.chat(node, messages)
        except LLMError:
            return None
        return parse_reply(completion.choice, ()).content or ""
    runtime.cluster.failed(node, LLMError(f"{node} took over {timeout_s:g} s"))
    return None


async def grade_reply(runtime: Any, grader: str, message: str, reply: str) -> float | None:
    """The grader's 1–10 for one reply; None when it fails, is late or says no number."""
    from loopengine.autolearn._scores import parse_grade

    prompt = GRADING_PROMPT.format(message=message, reply=reply)
    answer = await ask(runtime, grader, [{"role": "user", "content": prompt}], GRADE_TIMEOUT_S)
    return parse_grade(answer) if answer is not None else None


def grader_of(ctx: SkillContext) -> tuple[Any, str | None]:
    """The LLM runtime and the grader node; no grader when it is not in the cluster."""
    grader = ctx.config.autolearn.grader
    return ctx.llm, grader if ctx.llm is not None and grader in ctx.config.cluster.nodes else None


@skill(
    "autolearn.grade",
    description="Have the grader node (autolearn.grader) grade the newest chat responses not "
    "graded yet, at most `limit` a cycle, one call each with a 10 s deadline (a failed call "
    "leaves the response ungraded for good; while the grader cools down, the rest wait for a "
    "later cycle).",
)
async def autolearn_grade(ctx: SkillContext, limit: int = 20) -> JSONObject:
    from loopengine.store import autolearn

    runtime, grader = grader_of(ctx)
    if grader is None:
        reason = f"no grader: node {ctx.config.autolearn.grader!r} is not in the cluster"
        return {"grading": {"graded": 0, "ungraded": 0, "reason": reason}}
    import anyio

    store = store_of(ctx)
    if ctx.dry_run:
        waiting = await store.read(autolearn.count_ungraded, limit)
        return {"grading": {"graded": 0, "would_grade": waiting, "grader": grader}}
    now = ctx.clock()
    until = now + 2 * limit * GRADE_TIMEOUT_S  # twice the longest the grader may take
    rows = await store.write(autolearn.claim_ungraded, limit, now, until)
    left = [row.id for row in rows]
    try:
        return {"grading": await _grade_claimed(store, runtime, grader, rows, left)}
    finally:
        if left:  # cancelled, or the grader went down: the rest waits for a later cycle
            with anyio.CancelScope(shield=True):
                await store.write(autolearn.release, left, until)


async def _grade_claimed(
    store: Store, runtime: Any, grader: str, rows: list[ChatSample], left: list[int]
) -> JSONObject:
    """Grade the claimed ``rows`` in order, taking each id out of ``left`` once graded; stops
    when the grader cools down."""
    from loopengine.store import autolearn

    graded = 0
    for row in rows:
        if (down := runtime.cluster.available(grader)) is not None:
            done = len(rows) - len(left)
            return {"graded": graded, "ungraded": done - graded, "left": len(left), "reason": down}
        quality = await grade_reply(runtime, grader, row.message, row.reply)
        graded += quality is not None
        left.remove(row.id)
        await store.write(autolearn.grade, row.id, quality)
    return {"graded": graded, "ungraded": len(rows) - graded, "grader": grader}


@skill(
    "autolearn.scores",
    description="Score each node per category over the newest chat responses and propose the "
    "routing orders they earn (seed 003: 0.3 speed + 0.5 quality + 0.2 reliability); samples "
    "older than two windows are dropped.",
)
async def autolearn_scores(ctx: SkillContext) -> JSONObject:
    from loopengine.autolearn._scores import Sample, tune
    from loopengine.autolearn._trends import trends
    from loopengine.store import autolearn

    settings, store = ctx.config.autolearn, store_of(ctx)
    if not ctx.dry_run:
        await store.write(autolearn.prune_samples, KEPT_WINDOWS * settings.window)
    rows, previous = await store.read(autolearn.scoring_window, settings.window)
    samples = [Sample.of(row) for row in rows]
    found = tune(
        samples,
        await current_orders(ctx),
        window=settings.window,
        min_samples=settings.min_samples,
        margin=settings.margin,
        grader=settings.grader,
    )
    verdict = found.verdict if ctx.config.cluster.nodes else NO_CLUSTER
    categories = {c: [n.as_dict() for n in nodes] for c, nodes in found.scores.items()}
    changes = [
        {"category": category, "from": before, "to": after}
        for category, (before, after) in sorted(found.changes.items())
    ]
    return {
        "autolearn": {
            "samples": len(samples),
            "categories": categories,
            "trends": trends(categories, previous),
            "changes": changes,
            "verdict": verdict,
        }
    }


@skill(
    "autolearn.route",
    description="Write the proposed routing orders (each category's order replaced whole, the "
    "change and its reason kept in the autolearn history); `written` names the categories "
    "whose order reads back as proposed.",
)
async def autolearn_route(
    ctx: SkillContext, changes: list[dict[str, Any]], reason: str, dry_run: bool = False
) -> JSONObject:
    from loopengine.store import autolearn

    if dry_run or ctx.dry_run:
        return {"log": {"message": f"would write: {reason}"}}
    orders = [(str(c["category"]), [str(n) for n in c["to"]], c) for c in changes]
    store, now = store_of(ctx), ctx.clock()
    found = await store.write(autolearn.put_routings, orders, reason, ctx.execution_id, now)
    written = [
        category
        for category, _, change in orders
        if category in found and found[category].nodes == list(change["to"])
    ]
    return {"log": {"message": reason}, "routing": changes, "written": written}


@skill(
    "autolearn.analyze_trends",
    description="Ask the analysis node what the scores' trends say, when a score moved since "
    "the last cycle (optional: when it is down or takes over `timeout_s`, the cycle goes on "
    "without it).",
)
async def autolearn_analyze_trends(
    ctx: SkillContext, trends: dict[str, list[dict[str, Any]]], timeout_s: float = 60.0
) -> JSONObject:
    from loopengine.autolearn._trends import MAX_ANALYSIS, trend_messages

    node = ctx.config.autolearn.node("analysis", ctx.config.cluster.chain)
    moved = any(n["delta"] for nodes in trends.values() for n in nodes)
    if not moved or ctx.llm is None or node not in ctx.config.cluster.nodes:
        return {"trend_analysis": {"node": node, "status": "skipped", "text": None}}
    answer = await ask(ctx.llm, node, trend_messages(trends), timeout_s)
    if answer is None:
        return {"trend_analysis": {"node": node, "status": "no answer in time", "text": None}}
    return {"trend_analysis": {"node": node, "status": "ok", "text": answer[:MAX_ANALYSIS]}}


@skill(
    "autolearn.record_scores",
    description="Keep this cycle's scores in the store (a day of cycles per node and category), "
    "the next cycle's trends start from them.",
)
async def autolearn_record_scores(
    ctx: SkillContext, categories: dict[str, list[dict[str, Any]]], dry_run: bool = False
) -> JSONObject:
    from loopengine.store import autolearn

    count = sum(len(nodes) for nodes in categories.values())
    if not (dry_run or ctx.dry_run):
        store, now = store_of(ctx), ctx.clock()
        await store.write(autolearn.record_scores, categories, ctx.execution_id, now)
    return {"scores_recorded": count}

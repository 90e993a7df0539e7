"""Built-in autolearn skills (seed 003) that ``loops/autotune.yaml`` is made of: score the chat's
responses and propose routing orders (``autolearn.scores``), then write them
(``autolearn.route``). Everything lives in the store; no file is ever changed."""

from __future__ import annotations

from functools import partial
from typing import Any

from loopengine.errors import SkillError
from loopengine.skills._context import SkillContext
from loopengine.skills._definition import skill

__all__ = [
    "GRADE_TIMEOUT_S",
    "GRADING_PROMPT",
    "autolearn_grade",
    "autolearn_route",
    "autolearn_scores",
]

GRADE_TIMEOUT_S = 10.0
"""Longest the grader may take on one response; past it the response stays ungraded."""
GRADING_PROMPT = (
    "Grade the answer to the question from 1 (useless or wrong) to 10 (correct, complete and "
    "clear). Reply with the number only.\n\nQuestion:\n{message}\n\nAnswer:\n{reply}"
)


def _store(ctx: SkillContext) -> Any:
    if ctx.store is None:
        raise SkillError("autolearn skills need the engine's store")
    return ctx.store


async def current_orders(ctx: SkillContext) -> dict[str, list[str]]:
    """Each category's routing order: the tuned one over the config's."""
    from loopengine.llm import followed_routing
    from loopengine.store import autolearn

    return followed_routing(ctx.config, await _store(ctx).read(autolearn.routing))


async def _grade_one(runtime: Any, grader: str, row: dict[str, Any]) -> float | None:
    """The grader's 1–10 for one response; None when it fails, is late or says no number."""
    import anyio

    from loopengine.errors import LLMError
    from loopengine.llm import parse_grade, parse_reply

    prompt = GRADING_PROMPT.format(message=row["message"], reply=row["reply"])
    with anyio.move_on_after(GRADE_TIMEOUT_S):
        try:
            completion = await runtime.cluster.chat(grader, [{"role": "user", "content": prompt}])
        except LLMError:
            return None
        return parse_grade(parse_reply(completion.choice, ()).content or "")
    runtime.cluster.failed(grader, LLMError(f"grading took over {GRADE_TIMEOUT_S:g} s"))
    return None


@skill(
    "autolearn.grade",
    description="Have the grader node (autolearn.grader) grade the chat responses not graded yet, "
    "at most `limit` a cycle, one call each with a 10 s deadline (a failed call leaves the "
    "response ungraded for good; while the grader cools down, the rest wait for a later cycle).",
)
async def autolearn_grade(ctx: SkillContext, limit: int = 20) -> dict[str, Any]:
    from loopengine.store import autolearn

    grader = ctx.config.autolearn.grader
    runtime = ctx.llm
    if runtime is None or grader not in ctx.config.cluster.nodes:
        reason = f"no grader: node {grader!r} is not in the cluster"
        return {"grading": {"graded": 0, "ungraded": 0, "reason": reason}}
    store = _store(ctx)
    rows = await store.read(lambda c: autolearn.ungraded(c, limit))
    graded = 0
    for done, row in enumerate(rows):
        if (down := runtime.cluster.available(grader)) is not None:
            left = len(rows) - done
            return {
                "grading": {
                    "graded": graded,
                    "ungraded": done - graded,
                    "left": left,
                    "reason": down,
                }
            }
        quality = await _grade_one(runtime, grader, row)
        graded += quality is not None
        write = partial(autolearn.grade, sample_id=row["id"], quality=quality, now=ctx.clock())
        await store.write(write)
    return {"grading": {"graded": graded, "ungraded": len(rows) - graded, "grader": grader}}


@skill(
    "autolearn.scores",
    description="Score each node per category over the newest chat responses and propose the "
    "routing orders they earn (seed 003: 0.3 speed + 0.5 quality + 0.2 reliability).",
)
async def autolearn_scores(ctx: SkillContext) -> dict[str, Any]:
    from loopengine.llm import Sample, tune
    from loopengine.store import autolearn

    settings = ctx.config.autolearn
    rows = await _store(ctx).read(lambda c: autolearn.samples_in_window(c, settings.window))
    samples = [Sample.of(row) for row in rows]
    found = tune(
        samples,
        await current_orders(ctx),
        window=settings.window,
        min_samples=settings.min_samples,
        margin=settings.margin,
    )
    categories = {c: [n.as_dict() for n in nodes] for c, nodes in found.scores.items()}
    changes = [
        {"category": category, "from": before, "to": after}
        for category, (before, after) in sorted(found.changes.items())
    ]
    return {
        "autolearn": {
            "samples": len(samples),
            "categories": categories,
            "changes": changes,
            "verdict": found.verdict,
        }
    }


@skill(
    "autolearn.route",
    description="Write the proposed routing orders (each category's order replaced whole, the "
    "change and its reason kept in the autolearn history).",
)
async def autolearn_route(
    ctx: SkillContext, changes: list[dict[str, Any]], reason: str, dry_run: bool = False
) -> dict[str, Any]:
    from loopengine.store import autolearn

    if dry_run or ctx.dry_run:
        return {"log": {"message": f"would write: {reason}"}}
    now = ctx.clock()

    def write(connection: Any) -> None:
        for change in changes:
            category, nodes = str(change["category"]), [str(n) for n in change["to"]]
            autolearn.put_routing(connection, category, nodes, reason, ctx.execution_id, now)
            autolearn.add_history(connection, "routing", category, change, ctx.execution_id, now)

    await _store(ctx).write(write)
    return {"log": {"message": reason}, "routing": changes}

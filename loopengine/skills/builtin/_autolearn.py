"""Built-in autolearn skills (seed 003) that ``loops/autotune.yaml`` is made of: score the chat's
responses and propose routing orders (``autolearn.scores``), then write them
(``autolearn.route``). Everything lives in the store; no file is ever changed."""

from __future__ import annotations

from typing import Any

from loopengine.errors import SkillError
from loopengine.skills._context import SkillContext
from loopengine.skills._definition import skill

__all__ = ["autolearn_route", "autolearn_scores"]


def _store(ctx: SkillContext) -> Any:
    if ctx.store is None:
        raise SkillError("autolearn skills need the engine's store")
    return ctx.store


async def current_orders(ctx: SkillContext) -> dict[str, list[str]]:
    """Each category's routing order: the tuned one over the config's."""
    from loopengine.store import autolearn

    tuned = await _store(ctx).read(autolearn.routing)
    orders = {category: list(nodes) for category, nodes in ctx.config.cluster.routing.items()}
    orders.update({category: list(row["nodes"]) for category, row in tuned.items()})
    return orders


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

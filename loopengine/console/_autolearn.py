"""What autolearn learned: each node's score per category now and over time, the routing each
category follows, every change the loops made (instructions with their diff) and what the chat
remembers of each user; read as ``GET /autolearn/*`` reads it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine.app import learned, learning_history, perform, remembered, scores_over_time
from loopengine.autolearn import scores_view
from loopengine.console._drawing import HEIGHT, WIDTH, instructions_diffs, polyline
from loopengine.console._pages import PREFIX, Pages
from loopengine.store.autolearn import ScorePoint

__all__ = ["Chart", "Line", "autolearn_routes", "charts"]


@dataclass(frozen=True, slots=True)
class Line:
    """A node's scores in a category, oldest first, as a polyline; ``index`` picks its colour."""

    node: str
    index: int
    points: str
    last: float


@dataclass(frozen=True, slots=True)
class Chart:
    """A category's scores over time, one line per node."""

    category: str
    lines: list[Line]


def charts(points: Sequence[ScorePoint]) -> list[Chart]:
    """The scores kept (oldest first) as a chart per category, each node a line from 0 to 1."""
    by_category: dict[str, dict[str, list[float]]] = {}
    for point in points:
        by_category.setdefault(point.category, {}).setdefault(point.node, []).append(point.score)
    return [
        Chart(
            category,
            [
                Line(node, index, polyline(scores, 0.0, 1.0), scores[-1])
                for index, (node, scores) in enumerate(sorted(nodes.items()))
            ],
        )
        for category, nodes in sorted(by_category.items())
    ]


def autolearn_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/autolearn``."""
    context = pages.context

    async def shown(request: Request) -> Response:
        config = context.runtime.workspace.config
        found = await perform(context.store, learned(config.autolearn.window))
        history = await perform(context.store, learning_history())
        return pages.render(
            request,
            "autolearn.html",
            scores=scores_view(config, found),
            tuned=found.routing,
            charts=charts(await perform(context.store, scores_over_time())),
            history=history,
            diffs=instructions_diffs(history),
            users=await perform(context.store, remembered(None)),
            width=WIDTH,
            height=HEIGHT,
        )

    return [Route(PREFIX + "autolearn", shown, methods=["GET"])]

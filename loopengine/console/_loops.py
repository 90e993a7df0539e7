"""One loop: its file (highlighted) and whether it checks, its next cron fires with the
daylight-saving and catch-up decisions (``loop_plan``, as ``loopengine plan`` prints them), and
its recent executions."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine.app import history, loop_plan, loop_source, perform, served_loop
from loopengine.console._drawing import highlighted
from loopengine.console._pages import PREFIX, Pages
from loopengine.contract import LoopLoader

__all__ = ["RECENT", "loop_routes"]

RECENT = 20
"""Executions the loop's page lists."""


def loop_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/loops/{loop_id}``."""
    context = pages.context

    async def one(request: Request) -> Response:
        loop_id = request.path_params["loop_id"]
        shown = await perform(context.store, served_loop(loop_id, context.lease_s))
        recent = await perform(context.store, history(loop_id, None, RECENT))
        loop = context.loop(loop_id)
        source = plan = None
        if loop is not None:
            loader = LoopLoader(context.runtime.workspace.env, build=False)
            source = await asyncio.to_thread(loop_source, loop, loader)
            plan = loop_plan(loop)
        return pages.render(
            request,
            "loop.html",
            shown=shown,
            source=source,
            lines=highlighted(source.text) if source and source.text is not None else [],
            plan=plan,
            rows=recent.rows,
        )

    return [Route(PREFIX + "loops/{loop_id}", one, methods=["GET"])]

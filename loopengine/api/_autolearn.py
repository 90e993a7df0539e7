"""``/autolearn/*`` (seed 003): what the autolearn loops learned, as ``loopengine autolearn``
prints it, and a tuning cycle queued now."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import FastAPI, Query
from starlette.exceptions import HTTPException

from loopengine.api._context import MAX_SESSION_ID, SESSION_ID, ApiContext, queue_manual
from loopengine.app import learned, learning_history, perform, remembered
from loopengine.app import trigger as manual_job
from loopengine.autolearn import (
    AutolearnLoop,
    history_view,
    memory_view,
    scores_view,
    status_view,
)
from loopengine.store import autolearn

__all__ = ["add_autolearn_routes"]


def add_autolearn_routes(app: FastAPI, context: ApiContext) -> None:
    """``/autolearn/status``, ``/scores``, ``/history``, ``/memory``,
    ``POST /autolearn/trigger``."""
    config = context.runtime.workspace.config

    async def learned_now() -> autolearn.Learned:
        return await perform(context.store, learned(config.autolearn.window))

    @app.get("/autolearn/status")
    async def autolearn_status() -> dict[str, Any]:
        """Responses scored and graded, the tuned routing orders, each autolearn loop's last
        execution: what ``loopengine autolearn status --json`` prints."""
        return status_view(await learned_now())

    @app.get("/autolearn/scores")
    async def autolearn_scores() -> dict[str, Any]:
        """Each category's nodes with their scores, and the routing the chat follows."""
        return scores_view(config, await learned_now())

    @app.get("/autolearn/history")
    async def autolearn_history() -> dict[str, Any]:
        """Every routing change, newest first, with its reason and execution."""
        return {"history": history_view(await perform(context.store, learning_history()))}

    @app.get("/autolearn/memory")
    async def autolearn_memory(
        user: Annotated[str | None, Query(max_length=MAX_SESSION_ID, pattern=SESSION_ID)] = None,
    ) -> dict[str, Any]:
        """What the chat remembers of each user (of ``user`` only, when given): exchanges,
        profile and deep summary; what ``loopengine autolearn memory --json`` prints."""
        return {"users": memory_view(await perform(context.store, remembered(user)))}

    @app.post("/autolearn/trigger", status_code=202)
    async def autolearn_trigger(loop: AutolearnLoop = "autotune") -> dict[str, Any]:
        """Queue a cycle of an autolearn loop now (``autotune`` unless ``loop`` names
        ``autoreview`` or ``memory``), when the daemon serves it."""
        loop_id = loop
        served = context.loop(loop_id)
        if served is None:
            raise HTTPException(
                404,
                f"the daemon serves no {loop_id!r} loop: set daemon.autolearn: true in "
                f"loopengine.yaml, or copy the shipped loops/{loop_id}.yaml into its loops folder",
            )
        return asdict(await queue_manual(context, manual_job(served, {}, "api")))

"""``/autolearn/*`` (seed 003): what the autolearn loops learned, as ``loopengine autolearn``
prints it, and a tuning cycle queued now."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException

from loopengine.daemon._api_context import ApiContext, queue_firing, queued_job
from loopengine.daemon._intake import Firing
from loopengine.llm import history_view, read_learned, scores_view, status_view
from loopengine.store import autolearn, new_id

__all__ = ["add_autolearn_routes"]


def add_autolearn_routes(app: FastAPI, context: ApiContext) -> None:
    """``/autolearn/status``, ``/scores``, ``/history``, ``POST /autolearn/trigger``."""
    config = context.runtime.workspace.config

    async def learned() -> dict[str, Any]:
        window = config.autolearn.window
        found: dict[str, Any] = await context.store.read(lambda c: read_learned(c, window))
        return found

    @app.get("/autolearn/status")
    async def autolearn_status() -> dict[str, Any]:
        """Responses scored and graded, the tuned routing orders, each autolearn loop's last
        execution: what ``loopengine autolearn status --json`` prints."""
        return status_view(await learned())

    @app.get("/autolearn/scores")
    async def autolearn_scores() -> dict[str, Any]:
        """Each category's nodes with their scores, and the routing the chat follows."""
        return scores_view(config, await learned())

    @app.get("/autolearn/history")
    async def autolearn_history() -> dict[str, Any]:
        """Every routing change, newest first, with its reason and execution."""
        return {"history": history_view(await context.store.read(autolearn.history))}

    @app.post("/autolearn/trigger", status_code=202)
    async def autolearn_trigger() -> dict[str, Any]:
        """Queue a tuning cycle now (the ``autotune`` loop the daemon serves)."""
        loop_id = "autotune"
        loop = context.loop(loop_id)
        if loop is None:
            raise HTTPException(
                404,
                f"the daemon serves no {loop_id!r} loop: copy the shipped loops/{loop_id}.yaml "
                "into its loops folder",
            )
        firing = Firing(loop, {"type": "manual", "id": "api"}, f"manual:{new_id()}")
        intake, queued = await queue_firing(context, firing)
        job = queued_job(firing, intake, queued)
        context.queued()
        return {"job_id": job["id"], "loop_id": loop_id, "status": intake.status}

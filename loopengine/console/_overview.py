"""The overview: daemons alive, the queue, what runs, and each loop with its triggers, its last
outcomes, pause / unpause and a form to run it now."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine._json import JSON, loads
from loopengine.api._context import ApiContext
from loopengine.app import daemon_status, latest, pause, perform, served_loop, trigger
from loopengine.console._pages import PREFIX, Pages, redirect
from loopengine.contract import Loop, input_problems
from loopengine.errors import ContractError

__all__ = ["STRIP", "field_value", "form_inputs", "overview_routes", "queue_run"]

STRIP = 20
"""How many of a loop's last outcomes the overview shows."""
_INPUT = "in."
"""The prefix of a run form's fields that are the loop's params."""


def field_value(fragment: Mapping[str, Any], text: str) -> Any:
    """A form field's text as a param's value: the text itself for a param of type string, else
    its JSON reading when it is JSON (``10``, ``true``, ``[1, 2]``), else the text."""
    if fragment.get("type") == "string":
        return text
    try:
        return loads(text)
    except (ValueError, RecursionError):
        return text


def form_inputs(
    params: Mapping[str, Any], fields: Mapping[str, str]
) -> tuple[dict[str, JSON], dict[str, str]]:
    """The inputs a run form gives (an empty field leaves its param's default) and what is
    wrong with them by field, as the API reports it (``input_problems``)."""
    inputs = {
        name.removeprefix(_INPUT): field_value(params.get(name.removeprefix(_INPUT), {}), text)
        for name, text in fields.items()
        if name.startswith(_INPUT) and text != ""
    }
    problems: dict[str, str] = {}
    for name, value in inputs.items():
        for problem in input_problems(params, {name: value}):
            problems[name] = problem.removeprefix(f"{name}: ")
    return inputs, problems


async def queue_run(
    context: ApiContext, loop: Loop, inputs: Mapping[str, JSON], dry_run: bool
) -> Response | str:
    """Queue a run of ``loop`` (``trigger``) and see its executions next; why the loop did not
    take it (paused, overlap) otherwise."""
    try:
        await perform(context.store, trigger(loop, inputs, "console", dry_run=dry_run))
    except ContractError as exc:
        return str(exc)
    return redirect(f"{PREFIX}executions?{urlencode({'loop_id': loop.id})}")


def overview_routes(pages: Pages) -> list[BaseRoute]:
    """``/`` and the forms it posts: pause, unpause, run now."""
    context = pages.context

    async def render(
        request: Request, status_code: int = 200, failed: Mapping[str, object] | None = None
    ) -> Response:
        """The overview; ``failed``: the run form of one loop, shown again with what was
        wrong."""
        view = await perform(context.store, daemon_status(context.lease_s))
        outcomes = await perform(
            context.store, latest([loop.loop_id for loop in view.loops], STRIP)
        )
        served = {loop.loop_id: context.loop(loop.loop_id) for loop in view.loops}
        return pages.render(
            request,
            "overview.html",
            status_code,
            view=view,
            outcomes=outcomes,
            served=served,
            failed=failed,
        )

    async def overview(request: Request) -> Response:
        return await render(request)

    async def set_paused(request: Request) -> Response:
        await pages.posted(request)
        loop_id, paused = request.path_params["loop_id"], request.url.path.endswith("/pause")
        await perform(context.store, served_loop(loop_id, context.lease_s))
        await perform(context.store, pause(loop_id, paused))
        return redirect("/")

    async def run_now(request: Request) -> Response:
        fields = await pages.posted(request)
        loop_id = request.path_params["loop_id"]
        loop = context.loop(loop_id)
        if loop is None:
            raise HTTPException(404, f"this daemon does not serve a loop {loop_id!r}")
        inputs, problems = form_inputs(loop.spec.params or {}, fields)
        general = None
        if not problems:
            queued = await queue_run(context, loop, inputs, fields.get("dry_run") == "on")
            if isinstance(queued, Response):
                return queued
            general = queued
        failed = {"loop_id": loop_id, "general": general, "fields": problems, "given": fields}
        return await render(request, 409 if general else 422, failed=failed)

    return [
        Route("/", overview, methods=["GET"]),
        Route(PREFIX + "loops/{loop_id}/pause", set_paused, methods=["POST"]),
        Route(PREFIX + "loops/{loop_id}/unpause", set_paused, methods=["POST"]),
        Route(PREFIX + "loops/{loop_id}/run", run_now, methods=["POST"]),
    ]

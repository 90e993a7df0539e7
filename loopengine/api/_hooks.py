"""``POST /hooks/{path}``: a delivery fires the loop whose ``webhook`` trigger has that path,
once per delivery id, and a signed GitHub-style one once per body within the hook's tolerance
(``triggers.replay_digest``). A signed hook's delivery is checked (``triggers.verify_delivery``)
before its body is parsed; the body is bounded before it is read whole.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import Annotated, Any, NoReturn

from fastapi import FastAPI, Path, Request
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.responses import Response

import loopengine._tracing as tracing
from loopengine._json import NonFiniteNumber, loads
from loopengine._secrets import remember
from loopengine.api._context import ApiContext, queue_firing, queued_job
from loopengine.app import Firing
from loopengine.daemon import HookRoute, log_intake
from loopengine.errors import ExpressionError, TriggerError
from loopengine.expr import compile_template
from loopengine.store import intake, new_id, queue
from loopengine.triggers import (
    MAX_EVENT_DEPTH,
    delivery_of,
    nesting,
    replay_digest,
    verify_delivery,
    webhook_key,
)

__all__ = ["HookAccepted", "add_hook_routes"]

_TOO_DEEP = f"the body is nested more than {MAX_EVENT_DEPTH} levels"


class HookAccepted(BaseModel):
    """What a delivery became: the job it queued (or the first one, for a replay)."""

    job_id: str
    loop_id: str
    delivery_id: str
    status: str
    """``queued``, or ``duplicate`` when the delivery id (or a GitHub-style body within the
    hook's tolerance) was seen before: the first job."""


def add_hook_routes(app: FastAPI, context: ApiContext) -> None:
    """Webhooks."""

    @app.api_route("/hooks/{path:path}", methods=["POST", "PUT"], status_code=202)
    async def hook(
        path: Annotated[str, Path(max_length=1000)], request: Request, response: Response
    ) -> HookAccepted:
        """Fire the loop whose webhook trigger has ``path`` (its delivery checked against the
        trigger's secret when it has one); a delivery id seen before, or a signed GitHub body
        seen within the hook's tolerance, answers with the first job (200) and runs nothing."""
        route = _route(context, path, request.method)
        key = _secret_key(context, route)
        body = await request.body()  # bounded by BodyBounds, to this hook's max_body_bytes
        delivery = _delivery(context, route, key, request, body)
        firing = _firing(route, delivery, _payload(body), request.headers.get(tracing.TRACEPARENT))
        replayable = replay_digest(route.trigger.config.style, body) if key else None
        taken, queued = await _queued(context, route, firing, replayable)
        _log(context, route, delivery, taken)
        job = queued_job(firing, taken, queued)
        if taken.status == "duplicate":
            response.status_code = 200
        return HookAccepted(
            job_id=job["id"], loop_id=route.loop.id, delivery_id=delivery, status=taken.status
        )


async def _queued(
    context: ApiContext, route: HookRoute, firing: Firing, replayable: str | None
) -> tuple[intake.Intake, queue.Job | None]:
    """Queue ``firing`` (``queue_firing``), unless the body ``replayable`` names was sent by
    another delivery within the hook's tolerance: then a ``duplicate`` of that one's job."""
    if replayable is None:
        return await queue_firing(context, firing)
    now = time.time()
    until = now + route.trigger.config.tolerance_s
    body = _named(route, replayable)
    return await context.store.write(intake.enqueue_body, body, firing.arrival(now), now, until)


def _log(context: ApiContext, route: HookRoute, delivery: str, taken: intake.Intake) -> None:
    """One line per delivery (a replay too)."""
    fields = {"loop": route.loop.id, "trigger": route.trigger_id, "delivery": delivery}
    if taken.status == "duplicate":
        context.log.line("skip", "a delivery seen before: not run again", **fields)
    else:
        log_intake(context.log, taken, **fields)


def _route(context: ApiContext, path: str, method: str) -> HookRoute:
    """The route serving ``path`` with ``method``: 404 or 405, before the body is read."""
    route = context.hook(path)
    if route is None:
        raise HTTPException(404, f"no webhook is served at /hooks/{path[:200]}")
    accepted = route.trigger.config.method.value
    if method != accepted:
        raise HTTPException(405, f"/hooks/{route.path} accepts {accepted}", {"Allow": accepted})
    return route


def _refuse(context: ApiContext, route: HookRoute, status: int, reason: str) -> NoReturn:
    context.log.line("refuse", reason, loop=route.loop.id, hook=route.path, status=status)
    raise HTTPException(status, reason)


def _secret_key(context: ApiContext, route: HookRoute) -> bytes | None:
    """The HMAC key of the hook's secret, rendered from the environment now; None when the hook
    has no secret, 503 when it cannot be read."""
    secret = route.trigger.config.secret
    if secret is None:
        return None
    try:
        rendered = compile_template(secret).render({}, os.environ)
        if not rendered:
            raise TriggerError("it is empty")
        remember(str(rendered))
        return webhook_key(str(rendered))
    except (ExpressionError, TriggerError) as exc:
        _refuse(context, route, 503, f"the webhook's secret cannot be read: {exc}")


def _delivery(
    context: ApiContext, route: HookRoute, key: bytes | None, request: Request, body: bytes
) -> str:
    """The delivery id: of a verified delivery (401 if not), else the sender's or a new one."""
    config = route.trigger.config
    try:
        if key is None:
            return delivery_of(config.style, request.headers) or new_id()
        return verify_delivery(
            config.style,
            key,
            request.headers,
            body,
            now=time.time(),
            tolerance_s=config.tolerance_s,
        )
    except TriggerError as exc:
        _refuse(context, route, 401 if key is not None else 400, str(exc))


def _payload(body: bytes) -> Any:
    """The body as JSON of finite numbers, nested at most ``MAX_EVENT_DEPTH`` levels; 422 when
    it is not."""
    try:
        payload = loads(body, root="body")
    except RecursionError:
        raise HTTPException(422, _TOO_DEEP) from None
    except NonFiniteNumber as exc:
        raise HTTPException(422, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(422, f"the body is not JSON: {exc}") from None
    if nesting(payload) > MAX_EVENT_DEPTH:
        raise HTTPException(422, _TOO_DEEP)
    return payload


def _firing(route: HookRoute, delivery: str, payload: Any, traceparent: str | None) -> Firing:
    """The job of a delivery; its idempotency key names the loop, trigger and delivery id, and
    its execution continues the sender's trace (``traceparent``)."""
    trigger = {
        "type": "webhook",
        "id": route.trigger_id,
        "path": route.path,
        "delivery_id": delivery,
        "data": payload,
        **tracing.carried(traceparent),
    }
    return Firing(route.loop, trigger, f"webhook:{_named(route, delivery)}")


def _named(route: HookRoute, what: str) -> str:
    """A key naming ``what`` (a delivery id, a body's digest) for the route's loop and trigger."""
    return hashlib.sha256(f"{route.loop.id}\n{route.trigger_id}\n{what}".encode()).hexdigest()

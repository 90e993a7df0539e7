"""Logging in with the daemon's token (a form, never a URL) and out; wrong tokens tried too
often make logins wait."""

from __future__ import annotations

import math
import time
from collections import deque

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine.console._forms import read_form
from loopengine.console._pages import COOKIE, MAX_AGE_S, Pages, redirect
from loopengine.console._security import FAILED_LOGINS, login_wait, safe_next

__all__ = ["login_routes"]


def _set_session(response: Response, request: Request, value: str, max_age: int) -> Response:
    response.set_cookie(
        COOKIE,
        value,
        max_age=max_age,
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


def login_routes(pages: Pages) -> list[BaseRoute]:
    """``/login`` (the form, and its answer) and ``/logout``."""

    async def login_form(request: Request) -> Response:
        wanted = safe_next(request.query_params.get("next"))
        if pages.gate.token is None or pages.gate.session(request) is not None:
            return redirect(wanted)
        return pages.render(request, "login.html", next=wanted, error=None)

    failures: deque[float] = deque(maxlen=FAILED_LOGINS)

    async def login(request: Request) -> Response:
        fields = await read_form(request)
        wanted = safe_next(fields.get("next"))
        if pages.gate.token is None:
            return redirect(wanted)
        if wait := login_wait(failures, time.monotonic()):
            error = f"too many wrong tokens: try again in {math.ceil(wait)} s"
            refused = pages.render(request, "login.html", 429, next=wanted, error=error)
            refused.headers["Retry-After"] = f"{math.ceil(wait)}"
            return refused
        session = pages.gate.login(fields.get("token", ""))
        if session is None:
            failures.append(time.monotonic())
            error = "that is not the daemon's token (daemon.token or LOOPENGINE_API_TOKEN)"
            return pages.render(request, "login.html", 401, next=wanted, error=error)
        return _set_session(redirect(wanted), request, session, MAX_AGE_S)

    async def logout(request: Request) -> Response:
        await pages.posted(request)
        return _set_session(redirect("/login"), request, "", 0)

    return [
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]

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
from loopengine.console._pages import MAX_AGE_S, Pages, cookie_name, redirect
from loopengine.console._security import FAILED_LOGINS, login_wait, safe_next

__all__ = ["login_routes"]

_CLIENTS_KEPT = 10_000
"""Most client addresses whose wrong tokens are remembered (the oldest is forgotten first)."""


def _set_session(response: Response, request: Request, value: str, max_age: int) -> Response:
    response.set_cookie(
        cookie_name(request),
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

    failures: dict[str, deque[float]] = {}
    """When each client address last tried wrong tokens: one client's guesses make its own
    logins wait, never the owner's."""

    async def login(request: Request) -> Response:
        fields = await read_form(request)
        wanted = safe_next(fields.get("next"))
        if pages.gate.token is None:
            return redirect(wanted)
        client = request.client.host if request.client else ""
        tried = failures.get(client, ())
        if wait := login_wait(tried, time.monotonic()):
            error = f"too many wrong tokens: try again in {math.ceil(wait)} s"
            refused = pages.render(request, "login.html", 429, next=wanted, error=error)
            refused.headers["Retry-After"] = f"{math.ceil(wait)}"
            return refused
        session = pages.gate.login(fields.get("token", ""))
        if session is None:
            if client not in failures and len(failures) >= _CLIENTS_KEPT:
                del failures[next(iter(failures))]
            failures.setdefault(client, deque(maxlen=FAILED_LOGINS)).append(time.monotonic())
            error = "that is not the daemon's token (daemon.token or LOOPENGINE_API_TOKEN)"
            return pages.render(request, "login.html", 401, next=wanted, error=error)
        return _set_session(redirect(wanted), request, session, MAX_AGE_S)

    async def logout(request: Request) -> Response:
        await pages.posted(request)
        pages.gate.logout(request.scope["state"]["console_session"])
        return _set_session(redirect("/login"), request, "", 0)

    return [
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]

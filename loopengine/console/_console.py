"""The console as one ASGI app, and the paths it serves beside the API's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from loopengine.api._context import ApiContext
from loopengine.console._approvals import approval_routes
from loopengine.console._autolearn import autolearn_routes
from loopengine.console._chat import chat_routes
from loopengine.console._executions import execution_routes
from loopengine.console._live import live_routes
from loopengine.console._login import login_routes
from loopengine.console._loops import loop_routes
from loopengine.console._overview import overview_routes
from loopengine.console._pages import PREFIX, Guard, Pages, serves
from loopengine.console._signals import signal_routes
from loopengine.errors import NotFound, StoreUnavailable

__all__ = ["Console", "create_console"]

_STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True, slots=True)
class Console:
    """The console's app, and which paths are its own."""

    app: ASGIApp
    serves: Callable[[str], bool] = serves


def create_console(context: ApiContext) -> Console:
    """The console serving what ``context`` holds."""
    pages = Pages(context)

    async def failed(request: Request, exc: Exception) -> Response:
        status_code = exc.status_code if isinstance(exc, HTTPException) else 404
        message = exc.detail if isinstance(exc, HTTPException) else str(exc)
        answer = pages.render(request, "error.html", status_code, message=message)
        if isinstance(exc, HTTPException) and exc.headers:
            answer.headers.update(exc.headers)
        return answer

    async def unavailable(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StoreUnavailable)
        message = f"{exc}: reload in a moment"
        answer = pages.render(request, "error.html", 503, message=message)
        answer.headers["Retry-After"] = f"{max(1, round(exc.retry_after or 1))}"
        return answer

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: failed,
        NotFound: failed,
        StoreUnavailable: unavailable,
    }
    app = Starlette(
        routes=[
            *login_routes(pages),
            *overview_routes(pages),
            *execution_routes(pages),
            *loop_routes(pages),
            *signal_routes(pages),
            *autolearn_routes(pages),
            *live_routes(pages),
            *approval_routes(pages),
            *chat_routes(pages),
            Mount(f"{PREFIX}static", StaticFiles(directory=_STATIC), name="static"),
        ],
        exception_handlers=handlers,
    )
    return Console(Guard(app, pages))

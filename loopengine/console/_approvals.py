"""Approvals: what waits for a person, oldest first, with its plan and the time left before it
escalates, each answered in place through the execution page's form."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from loopengine.app import perform, waiting_approvals
from loopengine.console._pages import PREFIX, Pages

__all__ = ["APPROVALS", "LISTED", "approval_routes"]

APPROVALS = f"{PREFIX}approvals"
LISTED = 200
"""Most approvals the page lists."""


def approval_routes(pages: Pages) -> list[BaseRoute]:
    """``/console/approvals``."""

    async def listing(request: Request) -> Response:
        waiting = await perform(pages.context.store, waiting_approvals(LISTED))
        return pages.render(request, "approvals.html", waiting=waiting, listed=LISTED)

    return [Route(APPROVALS, listing, methods=["GET"])]

"""``GET /metrics``: the daemon's metrics in Prometheus text format (the token applies, as on
every endpoint but ``/health`` and ``/hooks/*``: give the scraper ``bearer_token``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Header
from starlette.responses import Response

from loopengine.api._context import ApiContext
from loopengine.store import queue

__all__ = ["add_metrics_routes"]


def add_metrics_routes(app: FastAPI, context: ApiContext) -> None:
    """``GET /metrics``."""

    @app.get("/metrics", response_class=Response)
    async def metrics(accept: Annotated[str | None, Header(max_length=1000)] = None) -> Response:
        """Executions by loop and outcome, phase durations, fire lateness, events matched,
        queue depth, and each LLM node's calls, tokens, latency and health."""
        depth = await context.store.read(queue.queue_depth)
        body, content_type = context.metrics.render(depth, accept)
        return Response(body, headers={"Content-Type": content_type})

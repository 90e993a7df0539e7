"""The HTTP API (FastAPI on uvicorn) and ``loopengine daemon``, which serves it beside the daemon:
loops, events, metrics, approvals, webhooks, chat and sessions over the daemon's parts.

Only ``loopengine daemon`` imports it (FastAPI loads when the daemon starts).
"""

from loopengine.api._serve import TOKEN_ENV, run_daemon

__all__ = ["TOKEN_ENV", "run_daemon"]

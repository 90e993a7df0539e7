"""The HTTP API served by uvicorn inside the daemon's task group, on a socket the daemon binds
itself (so that a taken port is one clear error, and port 0 picks a free one)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from loopengine.errors import ContractError

__all__ = ["ApiServer", "listening_socket"]


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; ``ContractError`` saying what to change when it cannot.

    Its protocol is named (``IPPROTO_TCP``, not 0) because asyncio sets ``TCP_NODELAY`` only on
    connections accepted from such a socket: without it, every answer on a kept-alive
    connection waited ~40 ms for the client's delayed ACK (Nagle)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        bound = socket.create_server((host, port), family=family, backlog=1024)
        return socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, bound.detach())
    except OSError as exc:
        raise ContractError(
            f"the HTTP API cannot listen on {host}:{port}: {exc.strerror or exc}; "
            "set daemon.host and daemon.port in loopengine.yaml (port 0: any free port)"
        ) from None


class ApiServer(uvicorn.Server):
    """uvicorn without its signal handlers: the daemon owns SIGINT and SIGTERM, and stops the
    server by setting ``should_exit``."""

    def __init__(self, app: FastAPI, bound: socket.socket) -> None:
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=5,
        )
        super().__init__(config)
        self.bound = bound

    @property
    def url(self) -> str:
        host, port = self.bound.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def run_bound(self) -> None:
        await self.serve(sockets=[self.bound])

"""The HTTP API served by uvicorn inside the daemon's task group, on a socket the daemon binds
itself (so that a taken port is one clear error, and port 0 picks a free one).

uvicorn bounds neither how long a request's head may take to arrive nor how many connections one
client holds: a client opening connections and sending nothing, or a byte now and then, kept
every one of them. Here each connection has ``header_timeout_s`` from its opening, or from the
previous answer, to send a request's line and headers whole; and one client address holds at
most ``connections_per_client``, its oldest connection still waiting for a request giving way to
a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from functools import partial
from typing import Any, Protocol, cast

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from loopengine.contract import DaemonSettings
from loopengine.errors import ContractError

__all__ = ["ApiServer", "Clients", "listening_socket"]


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


class Connection(Protocol):
    @property
    def waiting(self) -> bool:
        """Whether it waits for a request (none is being received or answered)."""

    def close(self) -> None: ...


class Clients:
    """The connections each client address holds, oldest first, at most ``limit`` each."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: dict[str, dict[Connection, None]] = {}

    def admit(self, address: str, connection: Connection) -> bool:
        """Hold ``connection`` of ``address``; at the limit, the address's oldest connection
        waiting for a request is closed to make room, and without one ``connection`` is not
        held (False)."""
        held = self.held.setdefault(address, {})
        if len(held) >= self.limit:
            idle = next((other for other in held if other.waiting), None)
            if idle is None:
                return False
            del held[idle]
            idle.close()
        held[connection] = None
        return True

    def release(self, address: str, connection: Connection) -> None:
        """Forget ``connection`` (closed)."""
        held = self.held.get(address, {})
        held.pop(connection, None)
        if not held:
            self.held.pop(address, None)


class _Bounded(H11Protocol):
    """uvicorn's h11 protocol, its head deadline and client limit added."""

    def __init__(self, *args: Any, clients: Clients, header_timeout_s: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.clients, self.header_timeout_s = clients, header_timeout_s
        self.deadline: asyncio.TimerHandle | None = None
        self.address = ""

    @property
    def waiting(self) -> bool:
        return bool(self.conn.their_state is h11.IDLE)

    def close(self) -> None:
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        if self.clients.admit(self.address, self):
            self._watch()
        else:
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.clients.release(self.address, self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Arm the deadline while a request's head is awaited (bytes arriving do not move it),
        disarm it once one is whole."""
        if not self.waiting or self.transport.is_closing():
            self._disarm()
        elif self.deadline is None:
            self.deadline = self.loop.call_later(self.header_timeout_s, self.close)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None


class ApiServer(uvicorn.Server):
    """uvicorn without its signal handlers (the daemon owns SIGINT and SIGTERM, and stops the
    server by setting ``should_exit``), with its connections bounded by ``settings``."""

    def __init__(self, app: ASGIApp, bound: socket.socket, settings: DaemonSettings) -> None:
        protocol = partial(
            _Bounded,
            clients=Clients(settings.connections_per_client),
            header_timeout_s=settings.header_timeout_s,
        )
        config = uvicorn.Config(
            app,
            http=cast(type[asyncio.Protocol], protocol),
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

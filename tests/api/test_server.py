"""The API's connections: accepted without Nagle's delay, closed when a request's head does not
arrive in time, and bounded per client address (a client's oldest waiting connection gives way
to its newest)."""

from __future__ import annotations

import asyncio
import os
import select
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import pytest

from loopengine.api._server import Clients, listening_socket
from tests.daemon.conftest import BY_HAND, Workspace

DEADLINE_S = 30.0
"""Generous: the daemons under test close what they close within a second or two."""


def test_accepted_connections_have_nodelay() -> None:
    async def main() -> int:
        accepted: asyncio.Queue[int] = asyncio.Queue()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            raw = writer.get_extra_info("socket")
            await accepted.put(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(serve, sock=listening_socket("127.0.0.1", 0))
        async with server:
            host, port = server.sockets[0].getsockname()[:2]
            _, writer = await asyncio.open_connection(host, port)
            flag = await asyncio.wait_for(accepted.get(), 10)
            writer.close()
        return flag

    assert asyncio.run(main()) != 0


@dataclass(eq=False)
class _Fake:
    waiting: bool = True
    closed: bool = False

    def close(self) -> None:
        self.closed = True


def test_a_client_at_its_limit_gives_up_its_oldest_waiting_connection() -> None:
    clients = Clients(limit=3)
    busy, oldest, newer, newest = _Fake(waiting=False), _Fake(), _Fake(), _Fake()
    for held in (busy, oldest, newer):
        assert clients.admit("10.0.0.1", held)
    assert clients.admit("10.0.0.1", newest)
    assert [c.closed for c in (busy, oldest, newer, newest)] == [False, True, False, False]
    assert list(clients.held["10.0.0.1"]) == [busy, newer, newest]


def test_a_client_whose_connections_are_all_busy_gets_no_more() -> None:
    clients = Clients(limit=2)
    busy = [_Fake(waiting=False), _Fake(waiting=False)]
    assert all(clients.admit("10.0.0.1", held) for held in busy)
    assert not clients.admit("10.0.0.1", _Fake())
    assert clients.admit("10.0.0.2", _Fake())


def test_a_client_is_forgotten_with_its_last_connection() -> None:
    clients = Clients(limit=2)
    held = _Fake()
    clients.admit("10.0.0.1", held)
    clients.release("10.0.0.1", held)
    assert clients.held == {}


def _serve(root_factory: pytest.TempPathFactory, name: str, daemon: str) -> Iterator[str]:
    """A daemon with ``daemon:`` settings ``daemon``, serving ``by_hand``; its API URL."""
    root = root_factory.mktemp(name)
    (root / "loops").mkdir()
    (root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    (root / "loopengine.yaml").write_text(f"daemon: {{port: 0, {daemon}}}\n")
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}", "NO_COLOR": "1"}
    for unset in ("LOOPENGINE_CONFIG", "LOOPENGINE_API_TOKEN"):
        env.pop(unset, None)
    running = Workspace(root, env).start()
    try:
        yield str(running.wait_for(lambda line: line.get("kind") == "ready")["api"])
    finally:
        assert running.stop() == 0


@pytest.fixture(scope="module")
def hasty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A daemon giving a request's head one second, and each client a thousand connections."""
    yield from _serve(
        tmp_path_factory, "hasty", "header_timeout_s: 1, connections_per_client: 1000"
    )


@pytest.fixture(scope="module")
def patient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A daemon giving a request's head five minutes, and each client eight connections."""
    yield from _serve(
        tmp_path_factory, "patient", "header_timeout_s: 300, connections_per_client: 8"
    )


def _connect(url: str, stack: ExitStack, sent: bytes = b"") -> socket.socket:
    address = urlsplit(url)
    connection = stack.enter_context(socket.create_connection((address.hostname, address.port)))
    connection.sendall(sent)
    return connection


def _closed_by_server(connection: socket.socket, until: float) -> bool:
    """Whether the server closes ``connection`` before ``until`` (what it sent is skipped)."""
    while (left := until - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            if not connection.recv(65_536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def test_connections_that_never_send_a_whole_head_are_closed(hasty: str) -> None:
    heads = [b"", b"GET /hea", b"GET /health HTTP/1.1\r\nHost: test\r\nX-A: "]
    with ExitStack() as stack:
        stalled = [_connect(hasty, stack, heads[i % 3]) for i in range(300)]
        until = time.monotonic() + DEADLINE_S
        assert all(_closed_by_server(connection, until) for connection in stalled)


def _trickled_until_closed(connection: socket.socket) -> bool:
    """Send ``connection`` a byte every tenth of a second until the server closes it; whether
    it does within ``DEADLINE_S``."""
    until = time.monotonic() + DEADLINE_S
    while not _closed_by_server(connection, time.monotonic() + 0.1):
        if time.monotonic() > until:
            return False
        try:
            connection.sendall(b"a")
        except (BrokenPipeError, ConnectionResetError):
            break
    return True


def test_a_head_trickled_a_byte_at_a_time_is_closed_all_the_same(hasty: str) -> None:
    with ExitStack() as stack:
        connection = _connect(hasty, stack, b"GET /health HTTP/1.1\r\nX-Slow: ")
        assert _trickled_until_closed(connection)


def test_a_kept_alive_connection_trickling_its_next_head_is_closed(hasty: str) -> None:
    with ExitStack() as stack:
        connection = _connect(hasty, stack, b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
        connection.settimeout(DEADLINE_S)
        assert connection.recv(65_536).startswith(b"HTTP/1.1 200 OK")
        connection.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
        assert _trickled_until_closed(connection)


def _closing(connections: list[socket.socket], count: int) -> list[socket.socket]:
    """The first ``count`` of ``connections`` the server closes (waiting for them at most
    ``DEADLINE_S``)."""
    closed: list[socket.socket] = []
    until = time.monotonic() + DEADLINE_S
    while len(closed) < count and (left := until - time.monotonic()) > 0:
        unread = [c for c in connections if c not in closed]
        for connection in select.select(unread, [], [], left)[0]:
            if _closed_by_server(connection, until):
                closed.append(connection)
    return closed


def test_a_client_holding_many_stalled_connections_keeps_eight_and_is_answered(
    patient: str,
) -> None:
    with ExitStack() as stack:
        stalled = [_connect(patient, stack) for _ in range(200)]
        closed = _closing(stalled, 200 - 8)
        assert len(closed) == 200 - 8
        assert [c for c in stalled if c not in closed] == stalled[-8:]
        assert httpx.get(f"{patient}/health", timeout=DEADLINE_S).status_code == 200

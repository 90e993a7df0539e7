"""The API's listening socket: connections accepted from it send at once (no Nagle delay)."""

from __future__ import annotations

import asyncio
import socket

from loopengine.daemon._server import listening_socket


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

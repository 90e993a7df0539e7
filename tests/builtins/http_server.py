"""A hostile-when-asked HTTP server on 127.0.0.1, in a thread: it echoes, answers a status, drips,
floods, and redirects, so the HTTP actions' bounds are tested against a real socket."""

from __future__ import annotations

import functools
import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import BaseServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

GIB = 1 << 30
_CHUNK = 65_536


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HostileServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests read what was asked, not a log."""

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"content-type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode()
        self.server.seen.append(
            {
                "method": self.command,
                "path": parts.path,
                "headers": dict(self.headers),
                "body": body,
            }
        )
        route = parts.path.strip("/").split("/")
        if route[0] == "echo":
            echoed = {"method": self.command, "headers": dict(self.headers), "body": body}
            self._answer(200, json.dumps(echoed).encode())
        elif route[0] == "status":
            statuses = self.server.statuses
            status = statuses.pop(0) if statuses else int(route[1])
            self._answer(status, b'{"status": "as asked"}', {"retry-after": "0"})
        elif route[0] == "redirect":
            self._answer(302, b"", {"location": query.get("to", "/redirect")})
        elif route[0] == "drip":
            self._drip()
        elif route[0] == "flood":
            self._flood()
        elif route[0] == "bomb":
            deflated = route[1] in ("deflate", "deflate-raw", "empty-blocks")
            sent_as = "deflate" if deflated else "gzip"
            self._answer(200, _bomb(route[1]), {"content-encoding": sent_as})
        else:
            text = b"x" * int(query["size"]) if "size" in query else b"plain text"
            self._answer(200, text, {"content-type": "text/plain; charset=utf-8"})

    def _drip(self) -> None:
        """One byte a second of a body that claims a minute's worth, until the client leaves."""
        self.send_response(200)
        self.send_header("content-length", "60")
        self.end_headers()
        for _ in range(60):
            if self.server.stopping.wait(1):
                return
            try:
                self.wfile.write(b"x")
                self.wfile.flush()
            except OSError:
                return

    def _flood(self) -> None:
        """A body of 1 GiB, written until the client stops reading."""
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(GIB))
        self.end_headers()
        chunk = b"[" * _CHUNK
        for _ in range(GIB // _CHUNK):
            if self.server.stopping.is_set():
                return
            try:
                self.wfile.write(chunk)
            except OSError:
                return

    do_GET = do_POST = do_PUT = do_DELETE = _handle


@functools.cache
def _bomb(encoding: str) -> bytes:
    """A compressed body that misbehaves: 64 MiB of '[' in about 64 KiB (``gzip``, ``deflate``
    with its zlib header, ``deflate-raw`` without, as some servers send it); ``corrupt`` (a gzip
    header, then noise); ``members`` (two gzip members, ``abc`` then ``def``); ``trailing`` (a
    gzip member, then 4 MiB of noise); ``empty-blocks`` (a deflate stream of 4 MiB of empty
    blocks, which decode to nothing)."""
    if encoding == "corrupt":
        return b"\x1f\x8b\x08\x00" + b"noise" * 100
    if encoding == "members":
        return gzip.compress(b"abc") + gzip.compress(b"def")
    if encoding == "trailing":
        return gzip.compress(b"abc") + b"noise" * ((4 << 20) // 5)
    if encoding == "empty-blocks":
        return b"x\x9c" + b"\x00\x00\x00\xff\xff" * ((4 << 20) // 5)
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}.get(encoding, -zlib.MAX_WBITS)
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    chunk = b"[" * (1 << 20)
    return b"".join(packer.compress(chunk) for _ in range(64)) + packer.flush()


class HostileServer(ThreadingHTTPServer):
    daemon_threads = False
    """Closing the server waits for each answer to end (each ends once the server stops)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        """Statuses ``/status/…`` answers first, in order, before the one its path names."""
        self.stopping = threading.Event()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def in_thread(server: BaseServer) -> Iterator[None]:
    """``server`` serving from a thread of its own until the block ends, then closed."""
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def serving() -> Iterator[HostileServer]:
    server = HostileServer()
    with in_thread(server):
        try:
            yield server
        finally:
            server.stopping.set()

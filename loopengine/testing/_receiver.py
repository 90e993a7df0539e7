"""A webhook receiver on 127.0.0.1: what a loop's ``webhook.send`` posts (or any sender), kept
and handed to a callback, its Standard Webhooks signature checked as the daemon's webhook
triggers check theirs when it is given the secret."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from loopengine._json import JSON
from loopengine.errors import TriggerError
from loopengine.triggers import verify_delivery, webhook_key

__all__ = ["MAX_BODY", "MAX_KEPT", "Delivery", "WebhookReceiver"]

MAX_BODY = 1_048_576
"""Most bytes of a body read, as the daemon's webhook triggers read by default; past that, 413."""
MAX_KEPT = 1000
"""Most deliveries ``deliveries`` keeps, the newest: a receiver left running stays bounded."""
TOLERANCE_S = 300.0
"""How far a delivery's ``webhook-timestamp`` may be from now, as the daemon's default."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One POST received: its path, its JSON body, and whether its signature held (None when
    the receiver has no secret; ``refused`` says why it did not hold)."""

    path: str
    body: JSON
    verified: bool | None
    refused: str | None = None

    def line(self) -> str:
        """The delivery in one line, as the command line prints it."""
        if self.refused is not None:
            return f"POST {self.path}  refused: {self.refused}"
        said = "  verified" if self.verified else ""
        return f"POST {self.path}{said}  {json.dumps(self.body, ensure_ascii=False)}"


class WebhookReceiver:
    """An HTTP server on 127.0.0.1, in a thread (``with`` runs it), that answers every JSON
    POST 200 and keeps it in ``deliveries`` (the newest ``MAX_KEPT``); with a ``secret``
    (``whsec_…`` or text, as a webhook trigger's), a delivery whose Standard Webhooks signature
    or time does not hold is answered 401 and kept as refused. ``port`` 0 takes a free one; a
    connection silent for ``read_timeout_s`` is closed, so a slow sender holds no thread."""

    def __init__(
        self,
        port: int = 0,
        secret: str | None = None,
        received: Callable[[Delivery], None] | None = None,
        read_timeout_s: float = 10.0,
    ) -> None:
        self._key = None if secret is None else webhook_key(secret)
        self._received = received
        self._lock = threading.Lock()
        self.deliveries: list[Delivery] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler(read_timeout_s))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _refusal(self, headers: dict[str, str], body: bytes) -> str | None:
        """Why the delivery's signature does not hold, or None when it does."""
        assert self._key is not None
        try:
            verify_delivery(
                "standard", self._key, headers, body, now=time.time(), tolerance_s=TOLERANCE_S
            )
        except TriggerError as exc:
            return str(exc)
        return None

    def _keep(self, path: str, headers: dict[str, str], body: bytes, parsed: JSON) -> Delivery:
        refused = None if self._key is None else self._refusal(headers, body)
        verified = None if self._key is None else refused is None
        delivery = Delivery(path, parsed if refused is None else None, verified, refused)
        with self._lock:
            self.deliveries.append(delivery)
            del self.deliveries[:-MAX_KEPT]
        if self._received is not None:
            self._received(delivery)
        return delivery

    def _handler(self, read_timeout_s: float) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = read_timeout_s

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, code: int, body: JSON) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _refuse(self, code: int, why: str) -> None:
                self.close_connection = True
                self._send(code, {"error": why})

            def do_POST(self) -> None:
                length = self.headers.get("Content-Length")
                if length is None or not (length.isascii() and length.isdigit()):
                    self._refuse(411, "send the body with a Content-Length")
                    return
                if int(length) > MAX_BODY:
                    self._refuse(413, f"the body is over {MAX_BODY:,} bytes")
                    return
                try:
                    body = self.rfile.read(int(length))
                except TimeoutError:
                    self.close_connection = True
                    return
                try:
                    parsed = json.loads(body)
                except (ValueError, RecursionError):
                    self._refuse(400, "the body is not JSON")
                    return
                headers = {name.lower(): value for name, value in self.headers.items()}
                delivery = receiver._keep(self.path, headers, body, parsed)
                if delivery.refused is not None:
                    self._send(401, {"error": delivery.refused})
                else:
                    self._send(200, {"received": True, "verified": delivery.verified})

        return Handler

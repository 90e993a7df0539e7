"""Where the built-in HTTP clients (``http_get``, ``http.request``, ``webhook.send``) may go: a
host resolved once per request, every address it has checked (loopback, private, link-local and
metadata addresses refused unless allowed), and the request sent to the address checked."""

from __future__ import annotations

import ipaddress
import socket
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import anyio.to_thread
import httpx

from loopengine._hosts import Allowed

__all__ = ["Allowed", "Reply", "checked_address", "reaches_inside", "send"]

_INSIDE_NETWORKS = (ipaddress.ip_network("100.64.0.0/10"), ipaddress.ip_network("192.0.0.0/24"))
"""Carrier-grade NAT and IETF protocol space: cloud metadata services live there, yet neither
is "private" to Python."""


def reaches_inside(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` reaches this machine, its network or a metadata service, looking
    through the IPv6 forms that carry an IPv4 address (mapped, 6to4, Teredo)."""
    if isinstance(address, ipaddress.IPv6Address):
        teredo = address.teredo[1] if address.teredo else None
        carried = address.ipv4_mapped or address.sixtofour or teredo
        if carried is not None:
            return reaches_inside(carried)
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
        or (address.version == 4 and any(address in network for network in _INSIDE_NETWORKS))
        or (address.version == 6 and address.is_site_local)
    )


def checked_address(host: str, port: int, allowed: Allowed) -> str:
    """The address to connect to for ``host``: resolved once, every answer checked, so a name
    that resolves again to another address (DNS rebinding) cannot reach what was refused."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise ConnectionError(f"cannot resolve {host!r}: {exc}") from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    for address in addresses:
        if (
            reaches_inside(address)
            and not allowed.admits(host, port)
            and not allowed.admits(str(address), port)
        ):
            raise PermissionError(
                f"{shown} is a loopback, private or metadata address ({address}); to reach it, "
                f"list '{shown}' under {allowed.setting}"
            )
    return str(addresses[0])


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer, its body read up to a bound (``truncated`` when there was more)."""

    status: int
    headers: httpx.Headers
    body: bytes
    truncated: bool
    charset: str | None

    @property
    def text(self) -> str:
        """The body decoded by its charset (UTF-8 when it names none this Python knows)."""
        try:
            return self.body.decode(self.charset or "utf-8", "replace")
        except LookupError:
            return self.body.decode("utf-8", "replace")


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    allowed: Allowed,
    *,
    limit: int,
    headers: httpx.Headers | None = None,
    content: bytes | None = None,
) -> Reply:
    """One request to ``url`` at the address checked for its host (``Host`` and TLS still name
    the host), no redirect followed, at most ``limit`` bytes of the body read."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("only http and https URLs are allowed")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = await anyio.to_thread.run_sync(
        checked_address, host, port, allowed, abandon_on_cancel=True
    )
    shown = f"[{address}]" if ":" in address else address
    given = f":{parts.port}" if parts.port else ""
    target = urlunsplit(parts._replace(netloc=f"{shown}{given}"))
    sent = httpx.Headers(headers)
    sent["Host"] = f"{f'[{host}]' if ':' in host else host}{given}"
    sent.setdefault("Accept-Encoding", "gzip, deflate")
    body, read = bytearray(), 0
    async with client.stream(
        method, target, headers=sent, content=content, extensions={"sni_hostname": host}
    ) as reply:
        inflate = _Inflater.of(reply.headers.get("content-encoding", ""))
        async for chunk in reply.aiter_raw():
            read += len(chunk)
            body += inflate(chunk, limit + 1 - len(body))
            if len(body) > limit or inflate.ended or read > _READ_PER_KEPT * limit:
                break
    truncated = len(body) > limit or read > _READ_PER_KEPT * limit
    cut = bytes(body[:limit])
    return Reply(reply.status_code, reply.headers, cut, truncated, reply.charset_encoding)


_READ_PER_KEPT = 2
"""Most bytes read for each byte a body may keep: a compressed body that decodes to little or
nothing (empty deflate blocks, noise after its end) is not read without end."""
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The window bits zlib decodes each content coding with (deflate: with its zlib header)."""


class _Inflater:
    """A compressed body decoded at most ``room`` bytes at a time, so a small answer that
    inflates a thousandfold (a gzip bomb) never outgrows the bound it is read to; gzip members
    one after another are decoded in turn, a deflate stream ends the body; an encoding other
    than one gzip or deflate layer is kept as sent."""

    def __init__(self, wbits: int | None) -> None:
        self.wbits = wbits
        self.decoder = None if wbits is None else zlib.decompressobj(wbits)
        self.started = False
        self.ended = False
        """Whether the body is whole: what follows a deflate stream is not read."""

    @classmethod
    def of(cls, encoding: str) -> _Inflater:
        return cls(_WBITS.get(encoding.strip().lower()))

    def __call__(self, chunk: bytes, room: int) -> bytes:
        """At most ``room`` bytes (at least 1) of what ``chunk`` decodes to."""
        if self.decoder is None:
            return chunk
        decoded = bytearray()
        while chunk and len(decoded) < room and not self.ended:
            if self.decoder.eof:
                if self.wbits != _WBITS["gzip"]:
                    self.ended = True
                    break
                self.decoder = zlib.decompressobj(self.wbits)
            decoded += self._decoded(chunk, room - len(decoded))
            chunk = self.decoder.unconsumed_tail or self.decoder.unused_data
        return bytes(decoded)

    def _decoded(self, chunk: bytes, room: int) -> bytes:
        assert self.decoder is not None
        try:
            try:
                return self.decoder.decompress(chunk, room)
            except zlib.error:
                if self.started or self.wbits != zlib.MAX_WBITS:
                    raise
                self.decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate sent without header
                return self.decoder.decompress(chunk, room)
        except zlib.error:
            raise ValueError("the answer's compressed body is corrupt") from None
        finally:
            self.started = True

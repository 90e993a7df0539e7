"""Who may call the daemon's HTTP API; pure.

A bearer token guards every endpoint but ``/health`` and ``/hooks/*`` (webhooks carry their own
signature) whenever one is set; tokens are compared in constant time. Without one, the API is
served on loopback only, to requests naming a loopback host (a page whose name was rebound to
127.0.0.1 names its own), and a change asked by a page of another site (a form posted
cross-site needs no token to be sent) is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import urlsplit

__all__ = [
    "OPEN_PATHS",
    "SAFE_METHODS",
    "bind_problem",
    "cross_site",
    "is_open",
    "loopback_host",
    "token_accepted",
]

OPEN_PATHS = ("/health",)
"""Paths served without a token; ``/hooks/`` and everything under it too."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing."""


def is_open(path: str) -> bool:
    """Whether ``path`` is served without a token."""
    return path in OPEN_PATHS or path.startswith("/hooks/")


def token_accepted(expected: str | None, authorization: str | None) -> bool:
    """Whether an ``Authorization`` header carries the expected bearer token (always, when no
    token is set); the comparison takes the same time whatever the header holds."""
    if expected is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    matches = hmac.compare_digest(given.strip().encode(), expected.encode())
    return scheme.lower() == "bearer" and matches


def bind_problem(host: str, token: str | None) -> str | None:
    """Why the API may not listen on ``host``: an address other than loopback needs a token."""
    if token:
        return None
    if host == "localhost":
        return None
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return (
        f"daemon.host {host!r} is not a loopback address and no token is set: set daemon.token "
        "(or LOOPENGINE_API_TOKEN), or listen on 127.0.0.1"
    )


def loopback_host(host: str) -> bool:
    """Whether a ``Host`` header names this machine by a loopback name or address."""
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else ""
    elif host.count(":") == 1:
        name = host.partition(":")[0]
    else:
        name = host
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def cross_site(origin: str | None, host: str) -> bool:
    """Whether a request's ``Origin`` names a site other than ``host`` (a request without one
    came from no page: a command, a script)."""
    if origin is None:
        return False
    return urlsplit(origin).netloc.lower() != host.lower()

"""Who may call the daemon's HTTP API; pure.

A bearer token guards every endpoint but ``/health`` and ``/hooks/*`` (webhooks carry their own
signature) whenever one is set; tokens are compared in constant time. Without one, the API is
served on loopback only.
"""

from __future__ import annotations

import hmac
import ipaddress

__all__ = ["OPEN_PATHS", "bind_problem", "is_open", "token_accepted"]

OPEN_PATHS = ("/health",)
"""Paths served without a token; ``/hooks/`` and everything under it too."""


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

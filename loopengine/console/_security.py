"""What keeps the console a way in for its user alone; pure.

Every answer carries headers that let a browser run the console's own script and nothing a
page shows (``HEADERS``); a request that changes something must come from a page of the console
(``same_origin``) and carry its session's CSRF token (``csrf_accepted``); without a token set,
the console answers only to loopback host names, so that a site whose name resolves to
127.0.0.1 cannot read it (DNS rebinding).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

__all__ = [
    "FAILED_LOGINS",
    "FAILED_LOGINS_WINDOW_S",
    "HEADERS",
    "csrf_accepted",
    "login_wait",
    "safe_next",
    "same_origin",
]

HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": (
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; "
        "object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}
"""Sent with every answer of the console."""
_MAX_NEXT = 2000
FAILED_LOGINS = 10
"""Most wrong tokens tried within ``FAILED_LOGINS_WINDOW_S``; past them, logins wait."""
FAILED_LOGINS_WINDOW_S = 60.0


def same_origin(headers: Mapping[str, str], scheme: str, host: str) -> bool:
    """Whether a request comes from a page served at ``scheme://host``: its ``Origin``, else
    (an older browser) its ``Referer``, names that origin; neither is a refusal."""
    expected = f"{scheme}://{host}".lower()
    if (origin := headers.get("origin")) is not None:
        return origin.lower() == expected
    referer = headers.get("referer")
    if not referer:
        return False
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}".lower() == expected


def csrf_accepted(expected: str, given: str | None) -> bool:
    """Whether a form carried the token of its session; the comparison takes the same time
    whatever it holds."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def safe_next(given: str | None) -> str:
    """Where to go after logging in: ``given`` when it is a path of this site (``/...``), never
    another site (``//host``, ``/\\host``, ``https://...``), else the overview."""
    if not given or len(given) > _MAX_NEXT or not given.startswith("/"):
        return "/"
    if given.startswith(("//", "/\\")) or any(ord(c) < 32 or c == "\\" for c in given):
        return "/"
    return given


def login_wait(failures: Sequence[float], now: float) -> float:
    """Seconds before a login may be tried, given when the latest wrong tokens were tried
    (oldest first): none while fewer than ``FAILED_LOGINS`` were within the window, so that
    guessing a token takes ages."""
    if len(failures) < FAILED_LOGINS:
        return 0.0
    return max(0.0, failures[-FAILED_LOGINS] + FAILED_LOGINS_WINDOW_S - now)

"""The console's session cookie, signed and checked without a store; pure.

A value is ``base64url(issued_at:expires_at:nonce).signature`` where the signature is
HMAC-SHA256 over the payload with a key derived from the API token, so changing the token ends
every session; it is compared in constant time. The CSRF token of a form is an HMAC of the
session it belongs to.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

__all__ = ["MAX_VALUE", "Session", "csrf_token", "issue", "session_key", "verify"]

MAX_VALUE = 256
"""Longest cookie value read; a longer one is refused before any decoding."""
_NONCE_BYTES = 64


@dataclass(frozen=True, slots=True)
class Session:
    """A signed session: when it began and ends, and the value the cookie holds."""

    issued_at: int
    expires_at: int
    value: str


def session_key(secret: str) -> bytes:
    """The signing key of sessions for ``secret`` (the API token, or the process's own random
    secret when none is set)."""
    return hmac.new(secret.encode(), b"loopengine console session", hashlib.sha256).digest()


def _signature(key: bytes, payload: str) -> str:
    digest = hmac.new(key, payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def issue(key: bytes, now: float, max_age_s: int, nonce: str) -> Session:
    """A session beginning at ``now`` and lasting ``max_age_s``; ``nonce`` (random, URL-safe)
    tells it from others issued the same second."""
    issued, expires = int(now), int(now) + max_age_s
    payload = base64.urlsafe_b64encode(f"{issued}:{expires}:{nonce}".encode()).decode()
    payload = payload.rstrip("=")
    return Session(issued, expires, f"{payload}.{_signature(key, payload)}")


def verify(key: bytes, value: str, now: float) -> Session | None:
    """The session ``value`` holds when ``key`` signed it and it has not expired at ``now``;
    None for anything else (tampered, expired, another key, malformed, too long)."""
    if len(value) > MAX_VALUE:
        return None
    payload, _, signature = value.partition(".")
    if not hmac.compare_digest(signature.encode(), _signature(key, payload).encode()):
        return None
    try:
        text = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
        issued, expires, nonce = text.split(":")
        issued_at, expires_at = int(issued), int(expires)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not nonce or len(nonce) > _NONCE_BYTES or not issued_at <= now < expires_at:
        return None
    return Session(issued_at, expires_at, value)


def csrf_token(key: bytes, session: str) -> str:
    """The token a form of ``session`` carries: only a page of that session can know it."""
    return _signature(key, f"csrf\n{session}")

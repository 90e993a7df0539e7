"""Webhook deliveries: whether one is signed with the hook's secret and fresh, and which delivery
it is; pure (the daemon reads the request, this decides).

Two styles. ``standard`` (Standard Webhooks): ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, several signatures
space-separated (any one matching accepts). ``github``: ``X-Hub-Signature-256: sha256=<hex HMAC
of the body>`` and ``X-GitHub-Delivery`` (no timestamp). Signatures are compared in constant time
and no reason given ever holds the expected one.

A ``github`` signature covers the body alone: a captured delivery re-sent under a fresh
``X-GitHub-Delivery`` verifies again. Such deliveries are also recognised by their body
(``replay_digest``), held for the hook's tolerance; a ``standard`` signature covers the id and a
timestamp, so a replay never verifies under another id, nor late.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from loopengine.errors import ExpressionError, TriggerError
from loopengine.expr import compile_template

__all__ = [
    "MAX_HEADER_CHARS",
    "MIN_KEY_BYTES",
    "SecretProblem",
    "delivery_of",
    "replay_digest",
    "secret_problem",
    "standard_signature",
    "verify_delivery",
    "webhook_key",
]

MIN_KEY_BYTES = 16
"""Shortest HMAC key accepted (Standard Webhooks' secrets are 24 to 64 bytes)."""
MAX_HEADER_CHARS = 4096
"""Most characters of a webhook header read; a longer one is refused unread."""
_DELIVERY_ID = re.compile(r"[\x21-\x7e]{1,200}")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_WHSEC = "whsec_"
_ID_HEADERS = {"standard": "webhook-id", "github": "X-GitHub-Delivery"}


def webhook_key(secret: str) -> bytes:
    """The HMAC key of ``secret``: a ``whsec_…`` secret base64-decoded, any other as UTF-8."""
    if not secret.startswith(_WHSEC):
        key = secret.encode()
    else:
        try:
            key = base64.b64decode(secret.removeprefix(_WHSEC), validate=True)
        except binascii.Error:
            raise TriggerError("the secret starts with whsec_ but the rest is not base64") from None
    if len(key) < MIN_KEY_BYTES:
        raise TriggerError(
            f"the secret is {len(key)} bytes; use at least {MIN_KEY_BYTES} (a short key is "
            "guessed, an empty one signs anything)"
        )
    return key


@dataclass(frozen=True, slots=True)
class SecretProblem:
    """Why a webhook's secret gives no key; ``unset`` when only a variable it reads is missing
    (``validate`` may run where the daemon's environment is not)."""

    message: str
    unset: bool = False


def secret_problem(secret: str, environ: Mapping[str, str]) -> SecretProblem | None:
    """Why ``secret`` (as the trigger writes it, ``${ secret.NAME }`` read from ``environ``) is
    no HMAC key of at least ``MIN_KEY_BYTES``, or None when it is one."""
    try:
        template = compile_template(secret)
    except ExpressionError as exc:
        return SecretProblem(str(exc))
    names = sorted(template.secret_names)
    source = " ".join(f"${name}" for name in names) or "written in the file"
    if unset := [name for name in names if name not in environ]:
        return SecretProblem(
            f"webhook secret ${unset[0]} is not set: a webhook's secret must hold at least "
            f"{MIN_KEY_BYTES} bytes, and a daemon refuses this loop without it; export "
            f"{unset[0]}=… where the daemon runs",
            unset=True,
        )
    try:
        webhook_key(str(template.render({}, environ)))
    except (ExpressionError, TriggerError) as exc:
        return SecretProblem(f"webhook secret {source}: {exc}")
    return None


def _id_header(style: str) -> str:
    try:
        return _ID_HEADERS[style]
    except KeyError:
        raise TriggerError(f"unknown webhook style {style!r}: standard or github") from None


def _header(headers: Mapping[str, str], name: str) -> str:
    """The header ``name``, bounded; ``TriggerError`` when it is missing or too long."""
    value = headers.get(name)
    if value is None:
        raise TriggerError(f"missing header {name}")
    if len(value) > MAX_HEADER_CHARS:
        raise TriggerError(f"header {name} is over {MAX_HEADER_CHARS} characters")
    return value


def _delivery_id(name: str, value: str) -> str:
    if not _DELIVERY_ID.fullmatch(value):
        raise TriggerError(f"header {name} must be 1 to 200 visible ASCII characters")
    return value


def delivery_of(style: str, headers: Mapping[str, str]) -> str | None:
    """The delivery id in ``style``'s header of an unsigned delivery, or None when absent.

    ``headers`` is case-insensitive (Starlette's ``Headers``), as in ``verify_delivery``."""
    name = _id_header(style)
    if headers.get(name) is None:
        return None
    return _delivery_id(name, _header(headers, name))


def _fresh(stamp: int, now: float, tolerance_s: float) -> None:
    skew = now - stamp
    if abs(skew) > tolerance_s:
        side = "past" if skew > 0 else "future"
        raise TriggerError(
            f"webhook-timestamp is {abs(skew):.0f} s in the {side}; "
            f"accepted within ±{tolerance_s:g} s"
        )


def _signed(expected: bytes, given: str) -> bool:
    return hmac.compare_digest(expected, given.encode("utf-8", "replace"))


def _standard(
    key: bytes, headers: Mapping[str, str], body: bytes, now: float, tolerance_s: float
) -> str:
    delivery = _delivery_id("webhook-id", _header(headers, "webhook-id"))
    stamp = _header(headers, "webhook-timestamp")
    if not _TIMESTAMP.fullmatch(stamp):
        raise TriggerError("header webhook-timestamp must be whole seconds since 1970")
    _fresh(int(stamp), now, tolerance_s)
    entries = (entry.partition(",") for entry in _header(headers, "webhook-signature").split())
    expected = standard_signature(key, delivery, stamp, body).encode()
    if not any(version == "v1" and _signed(expected, sig) for version, _, sig in entries):
        raise TriggerError("no v1 signature in webhook-signature matches the hook's secret")
    return delivery


def standard_signature(key: bytes, delivery: str, stamp: str, body: bytes) -> str:
    """The Standard Webhooks signature of ``body`` sent as ``delivery`` at ``stamp`` (whole
    seconds): base64 of the HMAC-SHA256 of ``"{delivery}.{stamp}.{body}"``, without ``v1,``."""
    mac = hmac.digest(key, f"{delivery}.{stamp}.".encode() + body, hashlib.sha256)
    return base64.b64encode(mac).decode()


def _github(key: bytes, headers: Mapping[str, str], body: bytes) -> str:
    delivery = _delivery_id("X-GitHub-Delivery", _header(headers, "X-GitHub-Delivery"))
    given = _header(headers, "X-Hub-Signature-256")
    if not given.startswith("sha256="):
        raise TriggerError("header X-Hub-Signature-256 must be sha256=<hex HMAC of the body>")
    expected = b"sha256=" + hmac.digest(key, body, hashlib.sha256).hex().encode()
    if not _signed(expected, given):
        raise TriggerError("X-Hub-Signature-256 does not match the hook's secret")
    return delivery


def verify_delivery(
    style: str,
    key: bytes,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance_s: float,
) -> str:
    """The delivery id of a request signed with ``key`` in ``style`` (a standard one also sent
    within ±``tolerance_s`` of ``now``), else ``TriggerError`` saying why; ``headers`` is
    case-insensitive (Starlette's ``Headers``)."""
    _id_header(style)
    if style == "github":
        return _github(key, headers, body)
    return _standard(key, headers, body, now, tolerance_s)


def replay_digest(style: str, body: bytes) -> str | None:
    """What names a verified delivery of ``style`` besides its id: the SHA-256 of a ``github``
    body (a delivery repeating it within the hook's tolerance is a replay, whatever its id);
    None for ``standard``, whose id is signed."""
    _id_header(style)
    return hashlib.sha256(body).hexdigest() if style == "github" else None

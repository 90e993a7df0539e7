"""Secret values this process resolved (``${ secret.NAME }``), kept out of everything stored,
logged or printed: the value itself, its usual transforms (case, base64, hex, reversed), and any
run of ``FRAGMENT`` characters of them (a secret split or cut still leaks its pieces).

Values are remembered where they are resolved, once, so every writer masks them without being
told which secrets its caller used.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

__all__ = ["FRAGMENT", "MASK", "SecretFilter", "known", "redact", "remember"]

MASK = "***"
FRAGMENT = 8
"""Shortest piece of a secret masked on its own (shorter secrets are masked whole)."""
_SHORTEST = 4
"""Values shorter than this are not treated as secrets: masking them would garble any text."""

_known: set[str] = set()
_forms: list[str] = []
_pieces: set[str] = set()


def _transforms(value: str) -> set[str]:
    raw = value.encode()
    encoded = {
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        raw.hex(),
        raw.hex().upper(),
    }
    forms = {value, value.upper(), value.lower(), value[::-1], *encoded}
    forms |= {form.rstrip("=") for form in encoded}
    return {form for form in forms if len(form) >= _SHORTEST}


def remember(value: str) -> None:
    """Treat ``value`` as a secret from now on, in this process."""
    if len(value) < _SHORTEST or value in _known:
        return
    _known.add(value)
    forms = _transforms(value)
    _forms.extend(forms)
    _forms.sort(key=len, reverse=True)
    for form in forms:
        _pieces.update(form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1))


def known() -> frozenset[str]:
    return frozenset(_known)


def _masked_text(text: str) -> str:
    for form in _forms:
        if form in text:
            text = text.replace(form, MASK)
    if len(text) < FRAGMENT or not _pieces:
        return text
    covered = bytearray(len(text))
    for start in range(len(text) - FRAGMENT + 1):
        if text[start : start + FRAGMENT] in _pieces:
            covered[start : start + FRAGMENT] = b"\x01" * FRAGMENT
    if not any(covered):
        return text
    out, index = [], 0
    while index < len(text):
        if covered[index]:
            while index < len(text) and covered[index]:
                index += 1
            out.append(MASK)
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def redact(value: Any) -> Any:
    """``value`` with every known secret masked, in strings, keys and nested containers (a copy
    when anything is); unchanged when no secret was resolved."""
    if not _known:
        return value
    if isinstance(value, str):
        return _masked_text(value)
    if isinstance(value, dict):
        return {redact(key): redact(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


class SecretFilter(logging.Filter):
    """Masks known secrets in a log record's message (its arguments merged in first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _known:
            message = record.getMessage()
            masked = _masked_text(message)
            if masked != message:
                record.msg, record.args = masked, None
        return True

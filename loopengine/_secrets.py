"""Secret values this process resolved (``${ secret.NAME }``), kept out of everything stored,
logged or printed: the value itself, its usual transforms (case, base64 at any alignment, hex,
reversed), and any run of ``FRAGMENT`` characters of them that mixes letters and digits (a
secret split or cut still leaks its pieces; a common word or ``https://`` inside a secret is
not masked everywhere).

Values are remembered where they are resolved, once, so every writer masks them without being
told which secrets its caller used.
"""

from __future__ import annotations

import base64
import io
import logging
import re
import threading
from collections.abc import Callable
from enum import Enum
from typing import Any, TextIO
from uuid import UUID

__all__ = ["FRAGMENT", "MASK", "MaskedStream", "SecretFilter", "known", "redact", "remember"]

MASK = "***"
FRAGMENT = 12
"""Shortest piece of a secret masked on its own (shorter secrets are masked whole)."""
_SHORTEST = 4
"""Values shorter than this are not treated as secrets: masking them would garble any text."""

_known: set[str] = set()
_pattern: list[tuple[re.Pattern[str], dict[str, str]]] = []
"""The one alternation of every form and piece, rebuilt when a secret is remembered, and the
short texts it masked: each a text and its masked form (a log line's keys and paths recur)."""
_MEMO_TEXT = 100
"""Longest text whose masked form is kept."""
_MEMO_SIZE = 1024
"""Most texts kept: the memo starts afresh once full."""
_parts: set[str] = set()
_Tree = dict[str, "_Tree"]
"""A prefix tree: each character to the tree of what may follow it (``""``: a word ends)."""


def _base64_forms(raw: bytes) -> set[str]:
    """``raw`` as base64 at each of the three alignments it may have inside a longer encoding:
    the characters that depend on ``raw`` alone."""
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    forms |= {form.rstrip("=") for form in forms}
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * shift + raw).decode().rstrip("=")
            start = (shift * 8 + 5) // 6
            end = len(text) - (1 if (shift + len(raw)) % 3 else 0)
            forms.add(text[start:end])
    return forms


def _transforms(value: str) -> set[str]:
    raw = value.encode()
    forms = {value, value.upper(), value.lower(), value[::-1], raw.hex(), raw.hex().upper()}
    forms |= _base64_forms(raw)
    return {form for form in forms if len(form) >= _SHORTEST}


def _random_looking(piece: str) -> bool:
    return any(c.isdigit() for c in piece) and any(c.isalpha() for c in piece)


def remember(value: str) -> None:
    """Treat ``value`` as a secret from now on, in this process."""
    if len(value) < _SHORTEST or value in _known:
        return
    _known.add(value)
    for form in _transforms(value):
        _parts.add(form)
        pieces = (form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1))
        _parts.update(piece for piece in pieces if _random_looking(piece))
    _pattern[:] = [(re.compile(_alternation(_parts)), {})]


def _alternation(words: set[str]) -> str:
    """A pattern matching each of ``words``, the longest where several start at one place,
    shaped as the tree of their prefixes: where ``a|b|…`` tries every word at each character
    of a text, it follows one branch (about three times faster on a log line)."""
    tree: _Tree = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _branches(tree)


def _branches(node: _Tree) -> str:
    """The pattern of a prefix tree's ``node``; a run of characters with one way on is written
    as it is, so a long secret nests no deeper than its branching points."""
    run = []
    while len(node) == 1 and "" not in node:
        [(char, node)] = node.items()
        run.append(re.escape(char))
    ends = "" in node
    alternatives = [re.escape(char) + _branches(child) for char, child in node.items() if char]
    if not alternatives:
        return "".join(run)
    body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
    return "".join(run) + (f"(?:{body})?" if ends else body)


def known() -> frozenset[str]:
    return frozenset(_known)


def _masked_text(text: str) -> str:
    """``text`` with every known form or piece masked; overlapping matches merge into one mask.
    A short text's is kept with the pattern that masked it, so one recurring is masked once."""
    if not _pattern:
        return text
    pattern, memo = _pattern[0]
    if len(text) > _MEMO_TEXT:
        return _masked_by(pattern, text)
    masked = memo.get(text)
    if masked is None:
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        masked = memo[text] = _masked_by(pattern, text)
    return masked


def _masked_by(pattern: re.Pattern[str], text: str) -> str:
    position = 0
    spans: list[list[int]] = []
    while (found := pattern.search(text, position)) is not None:
        start, end = found.span()
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
        position = start + 1
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(value: Any) -> Any:
    """``value`` with every known secret masked, in strings, keys and nested containers (a copy
    when anything is), and in the UUIDs and enumeration members JSON writes as text and as their
    value; unchanged when no secret was resolved."""
    if not _known:
        return value
    if isinstance(value, str):
        return _masked_text(value)
    if isinstance(value, dict):
        return {redact(key): redact(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, UUID):
        return _masked_text(str(value))
    if isinstance(value, Enum):
        return redact(value.value)
    return value


class SecretFilter(logging.Filter):
    """Masks known secrets in a log record: its message (arguments merged in first), and its
    traceback and stack, formatted here so that no handler prints them unmasked. On a handler
    it covers every logger whose records that handler prints."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _known:
            return True
        record.msg, record.args = _masked_text(record.getMessage()), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = _masked_text(record.exc_text)
        if record.stack_info:
            record.stack_info = _masked_text(record.stack_info)
        return True


class MaskedStream(io.TextIOBase):
    """Writes to ``target`` with known secrets masked, a whole line at a time (a secret printed
    in pieces is masked whole); a line's unfinished end goes at ``flush`` (and ``close``, which
    leaves ``target`` open), or once it passes ``MAX_PENDING`` characters. Safe to share between
    threads (skills print from theirs). ``before`` is called before each write to ``target``
    (what else writes to it writes out what it holds, keeping the order; never to this
    stream)."""

    MAX_PENDING = 65_536

    def __init__(self, target: TextIO, before: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.target = target
        self.before = before
        self.pending = ""
        self.lock = threading.Lock()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # a property on io.TextIOBase
        return self.target.encoding

    def isatty(self) -> bool:
        return self.target.isatty()

    def fileno(self) -> int:
        return self.target.fileno()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            whole, end, self.pending = (self.pending + text).rpartition("\n")
            if whole or end:
                self._write(_masked_text(whole + end))
            if len(self.pending) > self.MAX_PENDING:
                self._drain()
        return len(text)

    def flush(self) -> None:
        with self.lock:
            self._drain()
            self.target.flush()

    def _drain(self) -> None:
        if self.pending:
            self._write(_masked_text(self.pending))
            self.pending = ""

    def _write(self, text: str) -> None:
        if self.before is not None:
            self.before()
        self.target.write(text)

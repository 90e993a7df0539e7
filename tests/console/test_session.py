"""The session cookie: signed with a key derived from the token, expiring, refused when
anything in it changed."""

from __future__ import annotations

import base64

import pytest

from loopengine.console._session import MAX_VALUE, csrf_token, issue, session_key, verify

KEY = session_key("s3cret-token")
NOW = 1_800_000_000.0


def test_a_session_holds_until_it_expires() -> None:
    session = issue(KEY, NOW, 3600, "nonce-1")
    assert verify(KEY, session.value, NOW) == session
    assert verify(KEY, session.value, NOW + 3599) == session
    assert session.expires_at == int(NOW) + 3600


def test_an_expired_session_is_refused() -> None:
    assert verify(KEY, issue(KEY, NOW, 3600, "nonce-1").value, NOW + 3600) is None


def test_a_session_from_before_it_was_issued_is_refused() -> None:
    assert verify(KEY, issue(KEY, NOW, 3600, "nonce-1").value, NOW - 1) is None


def test_another_token_s_key_refuses_it() -> None:
    session = issue(KEY, NOW, 3600, "nonce-1")
    assert verify(session_key("another-token"), session.value, NOW) is None


def test_a_tampered_payload_is_refused() -> None:
    value = issue(KEY, NOW, 3600, "nonce-1").value
    _payload, signature = value.split(".")
    longer = base64.urlsafe_b64encode(f"{int(NOW)}:{int(NOW) + 10**9}:nonce-1".encode())
    assert verify(KEY, f"{longer.decode().rstrip('=')}.{signature}", NOW) is None


def test_a_tampered_signature_is_refused() -> None:
    value = issue(KEY, NOW, 3600, "nonce-1").value
    flipped = value[:-1] + ("A" if value[-1] != "A" else "B")
    assert verify(KEY, flipped, NOW) is None


@pytest.mark.parametrize(
    "value", ["", ".", "abc", "abc.def", "a" * (MAX_VALUE + 1), "\x00.\x00", "é.é"]
)
def test_a_malformed_value_is_refused(value: str) -> None:
    assert verify(KEY, value, NOW) is None


def test_a_signed_payload_that_is_not_a_session_is_refused() -> None:
    from loopengine.console._session import _signature

    payload = base64.urlsafe_b64encode(b"not:a:session:at:all").decode().rstrip("=")
    assert verify(KEY, f"{payload}.{_signature(KEY, payload)}", NOW) is None


def test_each_session_has_its_own_csrf_token() -> None:
    first, second = issue(KEY, NOW, 3600, "one"), issue(KEY, NOW, 3600, "two")
    assert csrf_token(KEY, first.value) != csrf_token(KEY, second.value)
    assert csrf_token(KEY, first.value) == csrf_token(KEY, first.value)
    assert csrf_token(session_key("other"), first.value) != csrf_token(KEY, first.value)

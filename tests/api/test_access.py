"""Who may call the HTTP API: a bearer token, compared in constant time; no token, no address
but loopback."""

from __future__ import annotations

import pytest

from loopengine.api._access import (
    bind_problem,
    cross_site,
    is_open,
    loopback_host,
    token_accepted,
)


def test_without_a_token_every_call_is_accepted() -> None:
    assert token_accepted(None, None)
    assert token_accepted(None, "Bearer anything")


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer wrong",
        "Basic s3cret-token",
        "s3cret-token",
        "Bearer s3cret-tokenx",
    ],
)
def test_a_missing_or_wrong_token_is_refused(header: str | None) -> None:
    assert not token_accepted("s3cret-token", header)


@pytest.mark.parametrize(
    "header", ["Bearer s3cret-token", "bearer s3cret-token", "Bearer  s3cret-token "]
)
def test_the_bearer_token_is_accepted(header: str) -> None:
    assert token_accepted("s3cret-token", header)


def test_health_and_webhooks_are_open_the_rest_is_not() -> None:
    assert is_open("/health")
    assert is_open("/hooks/github")
    assert not is_open("/status")
    assert not is_open("/healthz")
    assert not is_open("/hooks")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_needs_no_token(host: str) -> None:
    assert bind_problem(host, None) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.org"])
def test_another_address_needs_a_token(host: str) -> None:
    problem = bind_problem(host, None)
    assert problem is not None
    assert "daemon.token" in problem
    assert bind_problem(host, "s3cret-token") is None


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8787", "127.0.0.1", "localhost:8787", "LOCALHOST", "[::1]:8787", "[::1]"]
)
def test_loopback_names_are_loopback(host: str) -> None:
    assert loopback_host(host)


@pytest.mark.parametrize(
    "host", ["evil.example:8787", "evil.example", "10.0.0.1:8787", "", "[::1", "127.0.0.1.nip.io"]
)
def test_other_names_are_not(host: str) -> None:
    assert not loopback_host(host)


@pytest.mark.parametrize(
    ("origin", "host", "foreign"),
    [
        (None, "127.0.0.1:8787", False),
        ("http://127.0.0.1:8787", "127.0.0.1:8787", False),
        ("http://LOCALHOST:8787", "localhost:8787", False),
        ("https://evil.example", "127.0.0.1:8787", True),
        ("http://127.0.0.1:9999", "127.0.0.1:8787", True),
        ("null", "127.0.0.1:8787", True),
    ],
)
def test_a_request_is_cross_site_when_its_origin_names_another_site(
    origin: str | None, host: str, foreign: bool
) -> None:
    assert cross_site(origin, host) is foreign

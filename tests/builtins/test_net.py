"""Where the built-in HTTP clients may connect: addresses that reach inside are refused unless a
glob of ``actions.http.allow`` (or ``http_allow``) admits the host, and a name is resolved once."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from loopengine.builtins._net import Allowed, checked_address, reaches_inside


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "100.100.100.200",
        "169.254.169.254",
        "224.0.0.1",
        "0.0.0.0",
        "::1",
        "::ffff:127.0.0.1",
        "2002:7f00:0001::",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "192.0.0.192",
        "fec0::1",
    ],
)
def test_addresses_that_reach_inside_are_forbidden(address: str) -> None:
    assert reaches_inside(ipaddress.ip_address(address))


def test_a_public_address_is_allowed() -> None:
    assert not reaches_inside(ipaddress.ip_address("93.184.215.14"))


def test_a_name_is_checked_once_and_connected_to_as_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter(["93.184.215.14", "127.0.0.1"])

    def rebinding(host: str, *_: Any, **__: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), 0))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    assert checked_address("rebind.example", 443, Allowed()) == "93.184.215.14"


@pytest.mark.parametrize(
    ("pattern", "host", "port"),
    [
        ("127.0.0.1", "127.0.0.1", 8080),
        ("127.0.0.1:8080", "127.0.0.1", 8080),
        ("*.internal.example", "api.internal.example", 443),
        ("*.Internal.example:44?", "API.internal.example", 443),
        ("::1", "::1", 80),
        ("[::1]:8080", "::1", 8080),
    ],
)
def test_a_glob_admits_its_host_and_port(pattern: str, host: str, port: int) -> None:
    assert Allowed((pattern,)).admits(host, port)


@pytest.mark.parametrize(
    ("pattern", "host", "port"),
    [
        ("127.0.0.1:8080", "127.0.0.1", 8081),
        ("*.internal.example", "internal.example", 443),
        ("[::1]:8080", "::1", 80),
        ("localhost", "127.0.0.1", 80),
    ],
)
def test_a_glob_admits_no_other_host_or_port(pattern: str, host: str, port: int) -> None:
    assert not Allowed((pattern,)).admits(host, port)


def test_a_refusal_says_in_one_line_where_to_allow_the_host() -> None:
    with pytest.raises(PermissionError) as refused:
        checked_address("127.0.0.1", 8080, Allowed(("127.0.0.1:9",), "actions.http.allow"))
    assert str(refused.value) == (
        "127.0.0.1:8080 is a loopback, private or metadata address (127.0.0.1); to reach it, "
        "list '127.0.0.1:8080' under actions.http.allow"
    )


def test_an_address_the_host_resolves_to_may_be_allowed() -> None:
    allowed = Allowed(("127.0.0.1", "::1"))
    assert checked_address("localhost", 80, allowed) in ("127.0.0.1", "::1")

"""Where a form may come from, where a login may lead, how often a wrong token may be tried."""

from __future__ import annotations

import pytest

from loopengine.console._security import (
    FAILED_LOGINS,
    FAILED_LOGINS_WINDOW_S,
    csrf_accepted,
    login_wait,
    safe_next,
    same_origin,
)

HOST = "127.0.0.1:8787"


def test_a_form_from_the_console_s_own_origin_is_accepted() -> None:
    assert same_origin({"origin": "http://127.0.0.1:8787"}, "http", HOST)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "https://127.0.0.1:8787",
        "http://127.0.0.1:8788",
        "http://127.0.0.1:8787.evil.example",
        "",
    ],
)
def test_a_form_from_another_origin_is_refused(origin: str) -> None:
    assert not same_origin({"origin": origin}, "http", HOST)


def test_without_origin_the_referer_decides() -> None:
    assert same_origin({"referer": "http://127.0.0.1:8787/console/x"}, "http", HOST)
    assert not same_origin({"referer": "http://evil.example/127.0.0.1:8787"}, "http", HOST)


def test_neither_origin_nor_referer_is_refused() -> None:
    assert not same_origin({}, "http", HOST)


def test_the_origin_wins_over_the_referer() -> None:
    headers = {"origin": "http://evil.example", "referer": "http://127.0.0.1:8787/"}
    assert not same_origin(headers, "http", HOST)


def test_the_csrf_token_must_be_the_session_s() -> None:
    assert csrf_accepted("abc", "abc")
    assert not csrf_accepted("abc", None)
    assert not csrf_accepted("abc", "abd")
    assert not csrf_accepted("abc", "")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("/console/executions?loop_id=a", "/console/executions?loop_id=a"),
        (None, "/"),
        ("", "/"),
        ("//evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("javascript:alert(1)", "/"),
        ("/ok\r\nSet-Cookie: x=1", "/"),
        ("/" + "a" * 3000, "/"),
    ],
)
def test_a_login_leads_to_a_path_of_this_site_only(given: str | None, expected: str) -> None:
    assert safe_next(given) == expected


def test_logins_wait_once_too_many_wrong_tokens_were_tried_within_the_window() -> None:
    tried = [100.0 + n for n in range(FAILED_LOGINS)]
    assert login_wait(tried[:-1], 110.0) == 0.0
    assert login_wait(tried, 110.0) == 100.0 + FAILED_LOGINS_WINDOW_S - 110.0
    assert login_wait(tried, 100.0 + FAILED_LOGINS_WINDOW_S) == 0.0

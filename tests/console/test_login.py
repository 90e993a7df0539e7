"""Logging in with the token through a form, the session cookie's flags, logging out; every
page without a session leads to the login."""

from __future__ import annotations

from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

import pytest

from loopengine.console._pages import MAX_AGE_S, serves
from tests.console.conftest import TOKEN, Console, Served

PAGES = ["/", "/console/executions", "/console/executions/nope", "/console"]


@pytest.mark.parametrize("page", PAGES)
def test_a_page_without_a_session_leads_to_the_login(anonymous: Console, page: str) -> None:
    response = anonymous.http.get(page + "?a=1")
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/login"
    assert parse_qs(location.query) == {"next": [page + "?a=1"]}


def test_a_form_without_a_session_is_refused(anonymous: Console) -> None:
    response = anonymous.http.post(
        "/console/loops/counted/pause", data={"csrf": "x"}, headers={"Origin": anonymous.url}
    )
    assert response.status_code == 403


def test_the_login_page_is_a_form_that_posts_the_token(anonymous: Console) -> None:
    page = anonymous.http.get("/login")
    assert page.status_code == 200
    assert 'method="post" action="/login"' in page.text
    assert 'type="password"' in page.text


@pytest.mark.parametrize("token", ["", "wrong", TOKEN + "x", TOKEN[:-1]])
def test_a_wrong_token_is_refused_with_the_form_again(anonymous: Console, token: str) -> None:
    response = anonymous.login(token)
    assert response.status_code == 401
    assert "not the daemon&#39;s token" in response.text
    assert anonymous.cookie not in response.cookies
    assert anonymous.http.get("/").status_code == 303


def test_the_right_token_opens_a_session_and_leads_on(anonymous: Console) -> None:
    response = anonymous.login(next_page="/console/executions?loop_id=counted")
    assert response.status_code == 303
    assert response.headers["location"] == "/console/executions?loop_id=counted"
    assert anonymous.http.get("/").status_code == 200


def test_the_session_cookie_is_http_only_strict_and_expires(anonymous: Console) -> None:
    cookie = SimpleCookie(anonymous.login().headers["set-cookie"])[anonymous.cookie]
    assert cookie["httponly"] is True
    assert cookie["samesite"].lower() == "strict"
    assert cookie["path"] == "/"
    assert cookie["max-age"] == str(MAX_AGE_S)
    assert not cookie["secure"]
    assert TOKEN not in cookie.value


@pytest.mark.parametrize("next_page", ["//evil.example/", "https://evil.example/", "/\\evil"])
def test_a_login_never_leads_to_another_site(anonymous: Console, next_page: str) -> None:
    assert anonymous.login(next_page=next_page).headers["location"] == "/"


def test_a_login_posted_from_another_site_is_refused(anonymous: Console) -> None:
    response = anonymous.http.post(
        "/login", data={"token": TOKEN}, headers={"Origin": "http://evil.example"}
    )
    assert response.status_code == 403
    assert anonymous.cookie not in response.cookies


def test_a_forged_cookie_is_no_session(anonymous: Console) -> None:
    anonymous.http.cookies.set(anonymous.cookie, "MTc5NTcyMzU1NjoxNzk1NzY2NzU2Om4.forged")
    assert anonymous.http.get("/").status_code == 303


def test_the_token_is_not_the_api_s_way_into_the_console(anonymous: Console) -> None:
    response = anonymous.http.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 303


def test_logging_out_ends_the_session(console: Console) -> None:
    response = console.post("/logout", {})
    assert response.status_code == 303
    assert response.headers["location"] == "/login"
    assert console.http.get("/").status_code == 303


def test_a_copy_of_a_logged_out_sessions_cookie_is_no_session(
    served: Served, console: Console
) -> None:
    copied = console.http.cookies[console.cookie]
    console.post("/logout", {})
    other = served.client()
    other.http.cookies.set(other.cookie, copied)
    assert other.http.get("/").status_code == 303
    other.close()


def test_logging_out_needs_the_csrf_token(console: Console) -> None:
    response = console.http.post("/logout", data={"a": "b"}, headers={"Origin": console.url})
    assert response.status_code == 403
    assert console.http.get("/").status_code == 200


def test_the_api_still_needs_its_bearer_token(served: Served, console: Console) -> None:
    assert console.http.get("/status").status_code == 401
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert console.http.get("/status", headers=headers).status_code == 200


def test_no_path_of_the_api_is_the_console_s(served: Served, console: Console) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    paths = console.http.get("/openapi.json", headers=headers).json()["paths"]
    assert "/executions" in paths
    assert [path for path in paths if serves(path.split("{")[0].rstrip("/") or "/")] == []


def test_the_session_cookie_is_secure_behind_a_local_https_proxy(anonymous: Console) -> None:
    origin = anonymous.url.replace("http://", "https://")
    response = anonymous.http.post(
        "/login",
        data={"token": TOKEN},
        headers={"Origin": origin, "X-Forwarded-Proto": "https"},
    )
    assert response.status_code == 303
    assert SimpleCookie(response.headers["set-cookie"])[anonymous.cookie]["secure"] is True
